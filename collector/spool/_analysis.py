"""The inline detectors behind the inserts: stored spans are queryable at once, detections follow.

The spool writer marks each stored batch as the analysis backlog (``Spool.done(batch,
analyse=True)``) and goes on with the next batch; this thread takes the backlog oldest first,
computes the batch's detections from the very rows that were inserted and stores them with the
batch's token, then forgets the entries (``Spool.analysed``). A crash at any point loses no
analysis: the backlog is in the spool, and a repeated insert of the same detections is dropped
by the token.

When the detectors fall behind, the backlog would grow until the spool is full and ingest answers
503: analysis would hold back spans after all. Past ``bound_rows`` spans of backlog the detectors
sample instead: 1 output in N, N = 1 + backlog // bound_rows, so N rises with the backlog until
the detectors keep up, and falls back to 1 once they have caught up. Every output left out is
counted as not analysed (``sampled``), by project, on ``/metrics`` and the Overview.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping

from .._counters import FAILED, Counters, not_analysed_key
from ..errors import SpoolError, StoreError
from ..store import Store, join_events
from ._spool import Batch, Spool

logger = logging.getLogger("infersight.collector")

Detect = Callable[[bytes, int], tuple[bytes, Mapping[tuple[str, str], int]]]
"""The inline detectors: ``(otel_traces rows, sample_every) -> (detections rows, outputs not
analysed by (reason, project))``; with ``sample_every`` N > 1 they analyse 1 output in N and
count the others as ``sampled``. They bound their own time (a deadline per span)."""

BACKLOG_BOUND_ROWS = 100_000
"""Spans of backlog past which the detectors sample: 5 s of ingest at 20,000 spans/s, ~30 MB of
spool with content."""


class DetectionBacklog:
    """A thread storing the detections of the spool's stored batches, oldest first.

    ``detect`` ``None``: no detectors; the detections that entries of an older version carry are
    stored all the same. :meth:`start`, :meth:`stop` and :meth:`join` are for the writer; :meth:`wake` may be called
    from any thread and never blocks. A detector that fails loses that batch's detections
    (every span counted as not analysed, ``failed``), never a span; detections the store refuses
    are dropped and counted (``detections_dropped``); a store that is down is retried.
    """

    def __init__(
        self, spool: Spool, store: Store, counters: Counters, detect: Detect | None, *,
        bound_rows: int = BACKLOG_BOUND_ROWS, retry_s: tuple[float, float] = (0.1, 5.0),
    ) -> None:
        if bound_rows <= 0:
            raise ValueError(f"The 'bound_rows' parameter of DetectionBacklog must be positive; got {bound_rows}.")
        self.spool = spool
        self.store = store
        self.counters = counters
        self.detect = detect
        self.bound_rows = bound_rows
        self.retry_s = retry_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._found: tuple[str, bytes] | None = None  # (batch token, its detections) awaiting their insert
        self._thread = threading.Thread(target=self._run, name="infersight-detect", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        """Stop after the batch under way. What is left stays in the spool for the next start."""
        self._stop.set()
        self._wake.set()

    def join(self, timeout_s: float) -> None:
        """Wait for the thread; a detector run that outlives ``timeout_s`` is abandoned to it (the
        decoder's close kills its worker), and its batch is analysed again at the next start."""
        self._thread.join(timeout_s)

    def sample_every(self) -> int:
        """1 when the backlog is within its bound; else N, to analyse 1 output in N."""
        return 1 + self.spool.depth().backlog_rows // self.bound_rows

    def _run(self) -> None:
        delay = self.retry_s[0]
        while not self._stop.is_set():
            self._wake.clear()
            batch: Batch | None = None
            try:
                batch = self.spool.next_analysis()
                if batch is None:
                    self._wake.wait(1.0)
                    continue
                self._analyse(batch)
                delay = self.retry_s[0]
            except SpoolError:
                logger.exception("cannot read or update the analysis backlog in the spool; retrying")
                self._stop.wait(self.retry_s[1])
            except StoreError as exc:
                self.counters.add("store_errors")
                if exc.transient or batch is None:
                    logger.warning("detections insert failed, retried: %s", exc)
                    self._stop.wait(delay)
                    delay = min(delay * 2, self.retry_s[1])
                    continue
                # Refused for what they hold: they can be computed again from the stored spans.
                logger.error("detections of %d stored spans were refused and dropped: %s", batch.row_count, exc)
                found = self._found[1] if self._found else b""
                self.counters.add("detections_dropped", found.count(b"\n"))
                self._forget(batch)

    def _analyse(self, batch: Batch) -> None:
        if self._found is None or self._found[0] != batch.dedup_token:
            found = self._detections(batch)
            if self._stop.is_set():
                return  # maybe cut short by the decoder's close: the batch is analysed at the next start
            self._found = (batch.dedup_token, found)
        found = self._found[1]
        if found:
            # The batch's token plus a suffix (still hex): a retry after a crash is dropped.
            self.store.insert("detections", found, dedup_token=batch.dedup_token + "de")
        self._forget(batch)
        self.counters.add("detections", found.count(b"\n"))

    def _forget(self, batch: Batch) -> None:
        self.spool.analysed(batch)
        self._found = None

    def _detections(self, batch: Batch) -> bytes:
        """The batch's detections (never raises: a failure is logged and counted)."""
        if batch.detections or self.detect is None:  # entries of an older version carry detections from before the ack
            return batch.detections
        try:
            # The rows as the writer inserted them: completed by the GenAI events stored (its join).
            rows, _ = join_events(self.store, batch.rows)
            found, not_analysed = self.detect(rows, self.sample_every())
        except Exception:
            if self._stop.is_set():
                return b""
            logger.exception("the inline detectors failed on a batch of %d spans; its detections are lost",
                             batch.row_count)
            # Which rows carry an output is the detector's business: count every span of the batch.
            share, rest = divmod(batch.row_count, len(batch.projects) or 1)
            not_analysed = {(FAILED, project): share + (rest if i == 0 else 0)
                            for i, project in enumerate(batch.projects)}
            found = b""
        for (reason, project), outputs in not_analysed.items():
            self.counters.add(not_analysed_key(reason, project), outputs)
        return found
