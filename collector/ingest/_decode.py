"""OTLP trace requests into spool entries, in worker processes.

Decoding protobuf into rows is Python, about 25 µs a span. In the server process that work
would hold the GIL and share one core with the HTTP loop and the spool writer. The
:class:`Decoder` runs it in a pool of spawned worker processes instead (spawned, not forked: the
server process holds chDB and its threads), and they hand back the spool entry compressed, so
the server only commits it. The acknowledgement waits for decode and spool, nothing else.

The inline detectors run after the ack, in one more worker at low CPU priority: the spool writer
asks :meth:`Decoder.detect` for each batch's detections and inserts them with the batch's
deduplication token, so they are stored exactly once even across crashes. Each span has a
deadline there: a worker past it is killed and replaced, and that span goes unanalysed.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import partial

from starlette.concurrency import run_in_threadpool

from .._settings import DETECT_DEADLINE_S, IngestWindow
from ..errors import WorkerLost
from ..spool import Entry
from ..store import encode_rows
from . import _otlp
from ._detect import NotAnalysed, detect_rows, output_lines
from ._detect_worker import DetectWorker


@dataclass(frozen=True, slots=True)
class Decoded:
    """One request, ready for the spool: ``entry`` is ``None`` when no span was accepted."""

    entry: Entry | None
    rejected: list[str] = field(default_factory=list)

    @property
    def spans(self) -> int:
        return 0 if self.entry is None else self.entry.row_count


def decode_request(
    project: str,
    body: bytes,
    content_encoding: str | None,
    media: str,
    limit_bytes: int,
    window: IngestWindow | None = None,
) -> Decoded:
    """Decompress, decode and validate one request into a spool entry for ``project``.

    Raises :class:`~._errors.BadRequest` (or a subclass) for what a client must fix, among them
    :class:`PayloadTooLarge` for a body that inflates beyond ``limit_bytes`` or whose rows encode
    to more than :data:`ROWS_PER_BODY_BYTE` times that (every span repeats its resource, so a small
    body can name gigabytes of rows). CPU-bound and self-contained, so it runs in any process.
    """
    traces = _otlp.parse_traces(_otlp.decompress(body, content_encoding, limit_bytes), media)
    rejected: list[str] = []
    rows = _otlp.to_rows(traces, project, rejected, window=window)
    if not rows:
        return Decoded(None, rejected)
    encoded = encode_rows(rows, limit_bytes=ROWS_PER_BODY_BYTE * limit_bytes)
    entry = Entry.compress(project, encoded, len(rows), days=_otlp.day_range(rows), keys=_otlp.span_keys(rows))
    return Decoded(entry, rejected)


# How much larger than its decompressed body a request's rows may be. An SDK batch's rows are
# ~2x its protobuf (column names, a resource per span); a body beyond this is refused, 413.
ROWS_PER_BODY_BYTE = 4


def default_workers() -> int:
    """One core for the server process (HTTP, spool, writer), the rest decode; at most four."""
    return min(4, max(1, (os.cpu_count() or 2) - 1))


def _start_worker(server_pid: int, nice: int = 0) -> None:
    # A worker blocked on its task queue does not notice that the server was killed (kill -9,
    # OOM): it would live on as an orphan. Watch the parent and leave with it.
    threading.Thread(target=_exit_with, args=(server_pid,), name="exit-with-server", daemon=True).start()
    if nice:
        os.nice(nice)
    _warm()


def _exit_with(server_pid: int) -> None:
    while os.getppid() == server_pid:
        time.sleep(0.5)
    os._exit(0)


def _warm() -> None:
    # The first request should not pay for importing protobuf, prices and detectors.
    import infersight.detectors  # noqa: F401


# Bodies above this go to a lane of their own: the usual export batch (512 spans, ~1 MiB with
# content) never waits behind a bulk request of 100k spans, whoever sent it.
LARGE_BODY_BYTES = 4 << 20


# The detectors' worker yields the CPU to decoding (which an exporter waits on) and to the server.
DETECT_NICE = 10


class _Lane:
    """A pool of spawned decode workers, replaced when one of them dies, that takes waiting
    requests project by project in turn."""

    def __init__(self, workers: int, nice: int = 0) -> None:
        self.workers = workers
        self.nice = nice
        self.pool = self._new_pool()
        # Used on the event loop only: no lock.
        self._running = 0
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}
        self._turns: deque[str] = deque()  # projects with a request waiting, in the order they get a worker

    def _new_pool(self) -> ProcessPoolExecutor:
        pool = ProcessPoolExecutor(
            self.workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker, initargs=(os.getpid(), self.nice),
        )
        pool.submit(os.getpid)  # any task: it starts a worker (which warms up) now, not at the first request
        return pool

    def _lost(self, pool: ProcessPoolExecutor, exc: BrokenProcessPool) -> WorkerLost:
        if self.pool is pool:
            self.pool = self._new_pool()
            pool.shutdown(wait=False)
        return WorkerLost(f"a decode worker died: {exc}")

    async def run(self, project: str, call: partial[Decoded]) -> Decoded:
        """``call`` in a worker. At most ``workers`` + 1 calls are in the pool at once, and the
        waiting ones are taken project by project in turn (a pool's own queue is first come, first served): a
        project with a hundred requests queued delays another project's one request by about one
        request per worker, not by all hundred."""
        loop = asyncio.get_running_loop()
        turn: asyncio.Future[None] = loop.create_future()
        queue = self._waiting.setdefault(project, deque())
        queue.append(turn)
        if len(queue) == 1:
            self._turns.append(project)
        self._give_turns()
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # cancelled just as its turn came: pass it on
                self._running -= 1
                self._give_turns()
            raise
        pool = self.pool
        try:
            return await loop.run_in_executor(pool, call)
        except BrokenProcessPool as exc:
            raise self._lost(pool, exc) from exc
        finally:
            self._running -= 1
            self._give_turns()

    def _give_turns(self) -> None:
        # One request more than workers in flight: a worker finishing one finds the next already
        # in the pool's queue, instead of idling while the result travels back through the loop.
        while self._running < self.workers + 1 and self._turns:
            project = self._turns.popleft()
            queue = self._waiting[project]
            turn = queue.popleft()
            if queue:
                self._turns.append(project)  # its next request waits for the others' turns
            else:
                del self._waiting[project]
            if turn.done():  # its request was cancelled while waiting
                continue
            self._running += 1
            turn.set_result(None)


class Decoder:
    """Runs :func:`decode_request` in ``workers`` spawned processes (0: in a server thread).

    Bodies larger than ``large_bytes`` are decoded in one more process of their own, so a bulk
    request delays the others by no more than the CPU it shares with them; within a lane, waiting
    requests are taken project by project in turn, so one project's burst does not queue another
    project's request behind all of it. A worker that dies
    (killed, out of memory) fails the requests it had with :class:`WorkerLost`, which the
    receiver answers with 503 so the exporter retries, and its pool is replaced for the next
    request.
    """

    def __init__(
        self,
        workers: int,
        *,
        limit_bytes: int,
        window: IngestWindow | None = None,
        large_bytes: int = LARGE_BODY_BYTES,
        detect_deadline_s: float = DETECT_DEADLINE_S,
    ) -> None:
        if workers < 0:
            raise ValueError(f"The 'workers' parameter of Decoder must be 0 or more; got {workers}.")
        self.workers = workers
        self.limit_bytes = limit_bytes
        self.large_bytes = large_bytes
        self.detect_deadline_s = detect_deadline_s
        self.window = window or IngestWindow()
        self._usual = _Lane(workers) if workers else None
        self._large: _Lane | None = None  # started at the first large body: most deployments never send one
        self._detect: DetectWorker | None = None  # started at the first output to look at
        self._detect_lock = threading.Lock()

    async def decode(self, project: str, body: bytes, content_encoding: str | None, media: str) -> Decoded:
        call = partial(decode_request, project, body, content_encoding, media, self.limit_bytes, self.window)
        if self._usual is None:
            return await run_in_threadpool(call)
        if len(body) <= self.large_bytes:
            return await self._usual.run(project, call)
        if self._large is None:
            self._large = _Lane(1)
        return await self._large.run(project, call)

    def detect(self, rows: bytes) -> tuple[bytes, NotAnalysed]:
        """The inline detectors' ``detections`` rows for stored ``otel_traces`` rows, and the
        outputs not analysed, by (reason, project). Blocks (the spool writer calls it, after the
        ack). With workers, in a worker process where each span has ``detect_deadline_s``
        (:class:`~._detect_worker.DetectWorker`); raises :class:`WorkerLost` when closed
        meanwhile. Without (``workers=0``, for tests and development), in this thread, with
        no deadline."""
        lines = output_lines(rows)
        if not lines:
            return b"", {}
        if self._usual is None:
            return detect_rows(rows)
        with self._detect_lock:
            if self._detect is None:
                self._detect = DetectWorker(
                    self.detect_deadline_s, initializer=partial(_start_worker, os.getpid(), DETECT_NICE)
                )
            worker = self._detect
        return worker.detect(lines)

    def close(self) -> None:
        """Stop the workers: a detector run under way is abandoned, decodes under way finish."""
        with self._detect_lock:
            if self._detect is not None:
                self._detect.close()
        for lane in (self._usual, self._large):
            if lane is not None:
                lane.pool.shutdown(wait=True, cancel_futures=True)
