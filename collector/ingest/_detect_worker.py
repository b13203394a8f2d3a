"""The inline detectors in a process of their own, each span against a deadline.

The detectors are meant to be linear in their input, but a span chooses its own JSON Schema,
and jsonschema has slow paths a schema can ask for (``uniqueItems`` on objects compares every
pair of items). Spans are stored without waiting for their detections, but the detections of
every later batch wait behind the batch under analysis, so a span that never finishes would stop
analysis for every project (and, once the backlog fills the spool, storage). Hence:

1. The worker reports which span it is on; a span that is still running after
   ``deadline_s`` seconds gets its worker killed and a new one spawned.
2. That span is counted as not analysed (``deadline``; ``worker_lost`` if the worker died on
   it), and the call runs again without it: only the poison span goes unanalysed. A restarted
   run computes the spans before it again (one run more per kill: simpler than streaming
   partial results, and a batch's honest work is well under a second).
3. After :data:`MAX_KILLS` kills in one call the rest of the call is counted as not analysed,
   so one call takes at most its honest work times ``MAX_KILLS + 1``, plus ``MAX_KILLS``
   deadlines and restarts (~1 s each).
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import orjson

from .._counters import DEADLINE, WORKER_LOST
from .._settings import DETECT_DEADLINE_S
from ..errors import WorkerLost
from ._detect import NotAnalysed, count, detect_lines, output_lines, project_of

logger = logging.getLogger("infersight.collector")

MAX_KILLS = 3
START_TIMEOUT_S = 120.0  # spawning and importing the detectors, on a host that may be busy
_POLL_S = 0.1


class DetectWorker:
    """Runs :func:`~._detect.detect_lines` in a spawned process, killed and replaced when a span
    runs past ``deadline_s`` or the process dies.

    ``initializer`` runs first in the process (nice it, make it exit with the server). :meth:`detect`
    blocks, one call at a time; :meth:`close` may be called from any thread, and makes a running
    :meth:`detect` raise :class:`WorkerLost` at once.
    """

    def __init__(self, deadline_s: float = DETECT_DEADLINE_S, *, initializer: Callable[[], None] | None = None) -> None:
        if not deadline_s > 0:
            raise ValueError(f"The 'deadline_s' parameter of DetectWorker must be positive; got {deadline_s}.")
        self.deadline_s = deadline_s
        self.initializer = initializer
        self.kills = 0  # workers killed at the deadline, since start
        self._context = multiprocessing.get_context("spawn")
        self._process: BaseProcess | None = None
        self._conn: Connection | None = None
        self._progress: Any = None
        self._lock = threading.Lock()
        self._closed = threading.Event()

    def detect(self, rows: bytes) -> tuple[bytes, NotAnalysed]:
        """The ``detections`` rows of ``otel_traces`` JSONEachRow ``rows`` and the outputs not
        analysed, by (reason, project). Raises :class:`WorkerLost` only when closed meanwhile.

        The worker picks the lines that carry an output (:func:`~._detect.output_lines`) itself:
        splitting a 20,000-span batch into lines and joining them again costs ~4 µs a span, so
        this process does it only after a failure, to find the span the worker was on."""
        not_analysed: NotAnalysed = {}
        reason = WORKER_LOST
        with self._lock:
            for _ in range(MAX_KILLS + 1):
                try:
                    outcome = self._run(rows)
                except WorkerLost:
                    if self._closed.is_set():
                        raise
                    logger.error("the inline detectors' worker cannot be started; %d outputs go unanalysed",
                                 len(output_lines(rows)))
                    break
                if not isinstance(outcome, _Failed):
                    found, counted = outcome
                    for (why, project), outputs in counted.items():
                        count(not_analysed, why, project, outputs)
                    return found, not_analysed
                pending = output_lines(rows)  # the worker's lines, as it numbered them
                if not pending:
                    return b"", not_analysed
                reason = outcome.reason
                line = pending.pop(min(outcome.line, len(pending) - 1))
                project = _project(line)
                logger.warning("the inline detectors' worker was replaced (%s) on a span of project %r; "
                               "the span is stored without detections", reason, project)
                count(not_analysed, reason, project)
                if not pending:
                    return b"", not_analysed
                rows = b"\n".join(pending)
            for each in output_lines(rows):
                count(not_analysed, reason, _project(each))
        return b"", not_analysed

    def close(self) -> None:
        """Kill the worker; a running :meth:`detect` raises :class:`WorkerLost`. Never blocks long."""
        self._closed.set()
        self._kill()

    def _run(self, rows: bytes) -> tuple[bytes, NotAnalysed] | _Failed:
        """The worker's answer for ``rows``, or why and on which of their output lines it failed
        (maybe past the last when the worker died after it)."""
        conn = self._started()
        self._progress.value = -1
        try:
            conn.send_bytes(rows)
        except (OSError, ValueError):  # died since the check; ValueError: closed meanwhile
            self._kill()
            return _Failed(WORKER_LOST, 0)
        seen, since = -1, time.monotonic()
        while True:
            try:
                if conn.poll(_POLL_S):
                    found, counted = conn.recv()
                    return found, counted
            except (EOFError, OSError, ValueError):
                break
            if self._closed.is_set():
                raise WorkerLost("the collector is stopping")
            if self._process is None or not self._process.is_alive():
                break
            now = self._progress.value
            if now != seen:
                seen, since = now, time.monotonic()
            elif time.monotonic() - since > self.deadline_s:
                self.kills += 1
                self._kill()
                return _Failed(DEADLINE, max(seen, 0))
        if self._closed.is_set():
            raise WorkerLost("the collector is stopping")
        stuck = max(self._progress.value, 0)
        self._kill()
        return _Failed(WORKER_LOST, stuck)

    def _started(self) -> Connection:
        if self._process is not None and self._process.is_alive() and self._conn is not None:
            return self._conn
        self._kill()
        if self._closed.is_set():
            raise WorkerLost("the collector is stopping")
        ours, theirs = self._context.Pipe()
        self._progress = self._context.RawValue("q", -1)
        process = self._context.Process(
            target=_serve, args=(theirs, self._progress, self.initializer), name="infersight-detect", daemon=True
        )
        process.start()
        theirs.close()
        self._process, self._conn = process, ours
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ours.poll(_POLL_S):
            if self._closed.is_set() or not process.is_alive() or time.monotonic() > deadline:
                self._kill()
                raise WorkerLost("the inline detectors' worker did not start")
        try:
            ours.recv_bytes()
        except (EOFError, OSError) as exc:
            self._kill()
            raise WorkerLost("the inline detectors' worker did not start") from exc
        return ours

    def _kill(self) -> None:
        process, conn = self._process, self._conn
        self._process = self._conn = None
        if process is not None:
            process.kill()
            process.join(5)
        if conn is not None:
            conn.close()


@dataclass(frozen=True, slots=True)
class _Failed:
    reason: str
    line: int  # the index of the line the worker was on


def _project(line: bytes) -> str:
    try:
        return project_of(orjson.loads(line))
    except (orjson.JSONDecodeError, AttributeError):
        return ""


def _serve(conn: Connection, progress: Any, initializer: Callable[[], None] | None) -> None:
    """The worker: detections for each message of lines, until the server closes the pipe."""
    if initializer is not None:
        initializer()

    def at(index: int) -> None:
        progress.value = index

    conn.send_bytes(b"ready")
    while True:
        try:
            lines = output_lines(conn.recv_bytes())
        except (EOFError, OSError):
            return
        found: list[bytes] = []
        not_analysed: NotAnalysed = {}
        detect_lines(lines, found, not_analysed, progress=at)
        conn.send((b"".join(found), not_analysed))
