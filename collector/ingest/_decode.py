"""OTLP trace requests into spool entries, in worker processes.

Decoding protobuf into rows is Python, about 25 µs a span. In the server process that work
would hold the GIL and share one core with the HTTP loop and the spool writer. The
:class:`Decoder` runs it in a pool of spawned worker processes instead (spawned, not forked: the
server process holds chDB and its threads), and they hand back the spool entry compressed, so
the server only commits it (and, with more than one worker a lane, pairs nested calls across
the workers' requests: :class:`~._nesting.Pairing`). The acknowledgement waits for decode and
spool, nothing else.

The inline detectors run after the ack and behind the inserts, in one more worker at low CPU
priority: the spool's analysis thread asks :meth:`Decoder.detect` for each stored batch's
detections and inserts them with the batch's deduplication token, so they are stored exactly once
even across crashes; when it falls behind, it asks for 1 output in N and the rest are counted. Each span has a
deadline there: a worker past it is killed and replaced, and that span goes unanalysed.
"""

from __future__ import annotations

import asyncio
import heapq
import multiprocessing
import os
import re
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import orjson
from starlette.concurrency import run_in_threadpool

from infersight.sdk import semconv

from .._counters import SAMPLED
from .._settings import DETECT_DEADLINE_S, IngestWindow
from ..errors import PayloadTooLarge, WorkerLost
from ..spool import Entry
from ..store import encode_rows
from . import _otlp
from ._detect import NotAnalysed, count, detect_rows, has_output, output_lines, project_of
from ._detect_worker import DetectWorker
from ._nesting import Pairing, evidence


@dataclass(frozen=True, slots=True)
class Decoded:
    """One request, ready for the spool: ``entry`` is ``None`` when no span was accepted."""

    entry: Entry | None
    rejected: list[str] = field(default_factory=list)
    # The LLM spans' evidence for the server's Pairing (decode_request's ``earlier_requests`` false)
    calls: list[tuple[int, dict[str, Any]]] = field(default_factory=list)

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
    earlier_requests: bool = True,
) -> Decoded:
    """Decompress, decode and validate one request into a spool entry for ``project``.

    Nested calls are paired with the spans of earlier requests this process decoded; with
    ``earlier_requests`` false, within the request only, and the result carries the evidence of its
    LLM spans for the :class:`~._nesting.Pairing` that sees every worker's requests.

    Raises :class:`~._errors.BadRequest` (or a subclass) for what a client must fix, among them
    :class:`PayloadTooLarge` for a body that inflates beyond ``limit_bytes`` or whose rows encode
    to more than :data:`ROWS_PER_BODY_BYTE` times that (every span repeats its resource, so a small
    body can name gigabytes of rows). CPU-bound and self-contained, so it runs in any process.
    """
    traces = _otlp.parse_traces(_otlp.decompress(body, content_encoding, limit_bytes), media)
    rejected: list[str] = []
    rows = _otlp.to_rows(traces, project, rejected, window=window, earlier_requests=earlier_requests)
    if not rows:
        return Decoded(None, rejected)
    encoded = encode_rows(rows, limit_bytes=ROWS_PER_BODY_BYTE * limit_bytes)
    entry = Entry.compress(project, encoded, len(rows), days=_otlp.day_range(rows), keys=_otlp.span_keys(rows))
    return Decoded(entry, rejected, [] if earlier_requests else evidence(rows))


_PROJECT_IN_ROW = re.compile(rb'"' + re.escape(semconv.PROJECT.encode()) + rb'":"([^"\\]*)"')


def _project_in(line: bytes) -> str:
    """The project of an ``otel_traces`` JSONEachRow line: a search on bytes (what a sampled
    output costs instead of its analysis), a parse when the name has escapes."""
    found = _PROJECT_IN_ROW.search(line)
    if found is not None:
        return found.group(1).decode("utf-8", "replace")
    try:
        return project_of(orjson.loads(line))
    except (orjson.JSONDecodeError, AttributeError):
        return ""


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


# Requests that decode to more than this go to the bulk lane: its own workers at a lower CPU
# priority, so a small request never waits for a worker busy with seconds of someone's bulk
# request, whatever its compressed size. Decoding takes 20-80 ms a MiB on a quiet core and up to
# ten times that on a busy 2-core host (bench/fairness.py: a flood of 1.9 MiB requests kept
# another project's single span waiting 1.4 s there), so the fast lane takes half a MiB: the
# usual 512-span batch without content (272 KiB), not the one with content (~1 MiB).
LARGE_BODY_BYTES = 512 << 10

# The bulk lane yields the CPU to the fast lane and the server (which every ack waits on), and
# takes it from the detectors (which nobody waits on).
BULK_NICE = 5

# The detectors' worker yields the CPU to decoding (which an exporter waits on) and to the server.
DETECT_NICE = 10

# The fast lane hands the pool one request more than it has workers, if that request is at most
# this: a worker finishing one finds the next already there instead of idling while the result
# travels back through the loop (without it, 272 KiB requests were acknowledged at half the rate).
# Larger ones wait for a free worker: a request queued in the pool is one that another project's
# request cannot pass, so it should be a short one.
PREFETCH_BYTES = 320 << 10

# The bulk lane's prefetch, for requests up to this: an SDK's batch with content (512 spans of a
# 1 KB prompt and its answer, ~1 MiB) is a bulk request, and a worker left idle while each result
# travels back decoded a flood of 3.8 MiB requests at 0.65x the rate (bench/fairness.py) and
# stored spans with content at ~0.95x (bench/ingest.py). A larger request still waits for a free
# worker, so another project's bulk request waits behind one such request more at most.
BULK_PREFETCH_BYTES = 4 << 20

# What a request costs in its project's share of a lane beyond its decoded bytes: the server's
# part of any request (HTTP, spool commit), so a flood of empty requests is not free.
REQUEST_COST_BYTES = 16 << 10


def decoded_size_hint(body: bytes, content_encoding: str | None) -> int:
    """What ``body`` should decode to, without decoding it: its length, or for gzip the size its
    trailer states (ISIZE, the size mod 2^32). A sender can lie in the trailer; the fast lane
    decodes with a limit of its own, so a lie costs that much inflating and no more."""
    encoding = (content_encoding or "identity").strip().lower()
    if encoding == "gzip" and len(body) >= 18:  # a 10-byte header and an 8-byte trailer at least
        return max(len(body), int.from_bytes(body[-4:], "little"))
    return len(body)


@dataclass(order=True)
class _Waiting:
    """A request waiting for a worker, ordered by its start tag in its project's share of work."""

    start: float
    seq: int
    cost: int = field(compare=False)
    turn: asyncio.Future[None] = field(compare=False)


class _Lane:
    """A pool of spawned decode workers, replaced when one of them dies, shared fairly by work
    between the projects that wait for it.

    Start-time fair queuing: a waiting request's tag is where its project's work so far ends,
    or the lane's present (the tag of the request taken last) if that is later; the smallest
    tag gets the next worker. A project with a backlog of 50 MiB requests is tagged 50 MiB
    further on per request, so another project's 1 KiB request, tagged at the present, is taken
    next; two projects that both wait get equal bytes of decoding, not equal requests.
    """

    def __init__(self, workers: int, nice: int = 0, *, prefetch_bytes: int = 0) -> None:
        self.workers = workers
        self.nice = nice
        self.prefetch_bytes = prefetch_bytes
        self.pool = self._new_pool()
        # Used on the event loop only: no lock.
        self._running = 0
        self._queue: list[_Waiting] = []  # a heap
        self._seq = 0
        self._now = 0.0  # the start tag of the request taken last
        self._ends: dict[str, float] = {}  # project -> where its work queued so far ends

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

    async def run(self, project: str, call: partial[Decoded], cost_bytes: int = 0) -> Decoded:
        """``call`` in a worker, once its turn comes. The pool holds one call per worker, and one
        more if it costs at most ``prefetch_bytes`` (the pool's own queue is first come, first
        served); the waiting ones are taken by their project's share of work, counted as
        ``cost_bytes`` plus :data:`REQUEST_COST_BYTES` a request. A project with a hundred
        requests queued delays another project's one request by those in the pool and at most
        one more, however many it queued."""
        turn = self._wait(project, cost_bytes + REQUEST_COST_BYTES)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # cancelled just as its turn came: pass it on
                self._running -= 1
                self._give_turns()
            raise
        pool = self.pool
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(pool, call)
        except BrokenProcessPool as exc:
            raise self._lost(pool, exc) from exc
        finally:
            self._running -= 1
            self._give_turns()

    def _wait(self, project: str, cost: int) -> asyncio.Future[None]:
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        start = max(self._now, self._ends.get(project, 0.0))
        self._ends[project] = start + cost
        self._seq += 1
        heapq.heappush(self._queue, _Waiting(start, self._seq, cost, turn))
        self._give_turns()
        return turn

    def _give_turns(self) -> None:
        while self._queue and self._running <= self.workers:
            waiting = self._queue[0]
            if waiting.turn.done():  # its request was cancelled while waiting
                heapq.heappop(self._queue)
                continue
            if self._running == self.workers and waiting.cost > self.prefetch_bytes:
                break
            heapq.heappop(self._queue)
            self._now = max(self._now, waiting.start)
            self._running += 1
            waiting.turn.set_result(None)
        if len(self._ends) > 256:  # forget projects whose work is all in the past: it changes no tag
            self._ends = {p: end for p, end in self._ends.items() if end > self._now}


class Decoder:
    """Runs :func:`decode_request` in ``workers`` spawned processes (0: in a server thread).

    Two lanes, by how large a request decodes (its length, or gzip's stated size): up to
    ``large_bytes`` in the fast lane, larger in a bulk lane of ``workers`` more processes at a
    lower CPU priority, started at the first such request. So a bulk request delays the others
    by no more than the CPU it leaves them, whatever its compressed size; within a lane, waiting
    requests are taken by each project's share of work (bytes), so one project's flood does not
    queue another project's request behind all of it. A worker that dies (killed, out of
    memory) fails the requests it had with :class:`WorkerLost`, which the receiver answers with
    503 so the exporter retries, and its pool is replaced for the next request.
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
        self._usual = _Lane(workers, prefetch_bytes=PREFETCH_BYTES) if workers else None
        # With one worker a lane, each worker's memory sees every request of its lane; with more,
        # the halves of a nested call decoded by two workers meet here, for server CPU a worker a
        # lane does not pay: ~13 µs a span alone (evidence unpickled, marks), 26 more in the server
        # under bench/ingest.py's load with content on 2 cores, 0.85x the stored rate.
        self._pairing = Pairing() if workers > 1 else None
        self._large: _Lane | None = None  # started at the first large body: most deployments never send one
        self._detect: DetectWorker | None = None  # started at the first output to look at
        self._detect_lock = threading.Lock()
        self._closed = False

    async def decode(self, project: str, body: bytes, content_encoding: str | None, media: str) -> Decoded:
        def call(limit_bytes: int) -> partial[Decoded]:
            return partial(decode_request, project, body, content_encoding, media, limit_bytes, self.window,
                           earlier_requests=self._pairing is None)

        if self._usual is None:
            return await run_in_threadpool(call(self.limit_bytes))
        size = decoded_size_hint(body, content_encoding)
        if size <= self.large_bytes:
            # Decoded with the fast lane's own limit: a gzip trailer that understates the size
            # costs inflating ``large_bytes``, then the request goes to the bulk lane after all.
            try:
                return await self._paired(
                    await self._usual.run(project, call(min(self.limit_bytes, self.large_bytes)), size))
            except PayloadTooLarge:
                if self.large_bytes >= self.limit_bytes:
                    raise
            size = self.large_bytes
        if self._large is None:
            self._large = _Lane(self.workers, BULK_NICE, prefetch_bytes=BULK_PREFETCH_BYTES)
        return await self._paired(await self._large.run(project, call(self.limit_bytes), size))

    async def _paired(self, decoded: Decoded) -> Decoded:
        if self._pairing is None or decoded.entry is None or not decoded.calls:
            return decoded
        marks = await run_in_threadpool(self._pairing.marks, decoded.calls)
        return Decoded(decoded.entry.with_attributes(marks) if marks else decoded.entry, decoded.rejected)

    def detect(self, rows: bytes, sample_every: int = 1) -> tuple[bytes, NotAnalysed]:
        """The inline detectors' ``detections`` rows for stored ``otel_traces`` rows, and the
        outputs not analysed, by (reason, project). Blocks (the spool's analysis thread calls it,
        behind the inserts). ``sample_every`` N > 1: only every Nth output is analysed, the
        others are counted as ``sampled``. With workers, in a worker process where each span has
        ``detect_deadline_s`` (:class:`~._detect_worker.DetectWorker`); raises
        :class:`WorkerLost` when closed meanwhile. Without (``workers=0``, for tests and
        development), in this thread, with no deadline."""
        sampled: NotAnalysed = {}
        if sample_every > 1:
            lines = output_lines(rows)
            for i, line in enumerate(lines):
                if i % sample_every:
                    count(sampled, SAMPLED, _project_in(line))
            rows = b"\n".join(lines[::sample_every])
        if not has_output(rows):
            return b"", sampled
        if self._usual is None:
            found, not_analysed = detect_rows(rows)
        else:
            with self._detect_lock:
                if self._closed:
                    raise WorkerLost("the collector is stopping")
                if self._detect is None:
                    self._detect = DetectWorker(
                        self.detect_deadline_s, initializer=partial(_start_worker, os.getpid(), DETECT_NICE)
                    )
                worker = self._detect
            found, not_analysed = worker.detect(rows)
        for (reason, project), outputs in sampled.items():
            count(not_analysed, reason, project, outputs)
        return found, not_analysed

    def close(self) -> None:
        """Stop the workers: a detector run under way is abandoned (and none starts after),
        decodes under way finish. Closing again does nothing more."""
        with self._detect_lock:
            self._closed = True
            if self._detect is not None:
                self._detect.close()
        for lane in (self._usual, self._large):
            if lane is not None:
                lane.pool.shutdown(wait=True, cancel_futures=True)
