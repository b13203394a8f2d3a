"""The spool writer: one background thread moving acknowledged spans from the spool to the store."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from .._counters import Counters
from ..errors import SpoolError, StoreError
from ..store import Store, complete_calls, encode_rows, held_spans, join_events
from ._analysis import BACKLOG_BOUND_ROWS, Detect, DetectionBacklog
from ._spool import Batch, Spool

logger = logging.getLogger("infersight.collector")

# The largest batch in raw bytes. A batch in the writer costs about four times its raw size at
# the peak (the decompressed rows, and ClickHouse's parse of them with the views' blocks); at 64
# MiB a 20,000-span batch of SDK spans with content (~2.4 KiB of row each) still fits one insert.
MAX_BATCH_RAW_BYTES = 64 << 20

INSERT_GRACE_S = 10.0
"""How long :meth:`SpoolWriter.stop` waits, past the drain, for an insert under way."""


class SpoolWriter:
    """Drains ``spool`` into ``store``'s ``otel_traces``, oldest first, in merged batches.

    Args:
        max_rows, max_bytes: the largest batch, in rows and in raw (uncompressed) bytes; several
            requests become one insert, because ClickHouse wants few large inserts, not one small
            part per request (an insert of 20,000 spans costs ~25% less CPU per span than one of
            5,000, merges included). Raw bytes, not compressed ones: what a batch costs in
            memory is its decompressed rows and ClickHouse's parse of them, and a compressible
            span is 100 times its stored size.
        min_interval_s: unless half a batch or more is waiting, the next insert waits this long
            after the previous one, so a trickle of requests still makes a few inserts a second.
        fill_s: under load (the last batch held a tenth of ``max_rows`` or more) the next batch
            waits, past ``min_interval_s``, until half a batch is waiting or the oldest waiting
            span was acknowledged ``fill_s`` seconds ago. A sustained load then makes batches of
            its rate times ``fill_s`` instead of what came in during the last insert: at ~10,000
            spans/s with content, a median of ~9,000 spans instead of ~4,000, which cuts the
            store's CPU per span by a quarter to a third (fewer parts to write and merge). The
            oldest span's wait is bounded by ``fill_s`` plus the insert: ack -> queryable stays
            under 2 s.
        retry_s: (first, longest) wait after a failed insert; the wait doubles up to the longest.
            When the store is down or busy (a transient error) the failed batch stays in the
            spool and is retried as it was, same token, for as long as it takes. When it refuses
            the rows themselves, the batch is halved until the refused request is found and set
            aside in ``dead_letters``: one request never holds back the others.
        counters: where ``spans_stored``, ``spans_repeated``, ``detections``, ``store_errors``,
            ``spans_dead_lettered`` and ``detections_dropped`` are counted, and the outputs not
            analysed by reason and project (``not_analysed_key``).
        detect: the inline detectors, run on each stored batch behind the inserts, from the
            spool's durable backlog (:class:`~._analysis.DetectionBacklog`): the writer never
            waits for them, and past ``backlog_bound_rows`` spans of backlog they sample.
            ``None``: no detectors (detections spooled by an older version are still stored).

    Each span is stored once by (project, TraceId, SpanId): a batch holds a span once, and the
    spans the store already holds (an exporter resent a request whose 200 it never saw, before
    or after a restart) are left out of the insert (:func:`~..store.held_spans`, one lookup per
    batch, recorded in the spool before the insert), and the detectors see only the spans new to
    the store. Left out before the insert, so every table the views fill from ``otel_traces``
    counts each span once too.

    :meth:`start` and :meth:`stop` are for the app's lifespan; :meth:`wake` may be called from
    any thread and never blocks.
    """

    def __init__(
        self,
        spool: Spool,
        store: Store,
        counters: Counters,
        *,
        max_rows: int = 20_000,
        max_bytes: int = MAX_BATCH_RAW_BYTES,
        min_interval_s: float = 0.2,
        fill_s: float = 0.8,
        retry_s: tuple[float, float] = (0.1, 5.0),
        detect: Detect | None = None,
        backlog_bound_rows: int = BACKLOG_BOUND_ROWS,
    ) -> None:
        self.spool = spool
        self.store = store
        self.counters = counters
        self.detect = detect
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.min_interval_s = min_interval_s
        self.fill_s = fill_s
        self.retry_s = retry_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._drain_until = 0.0
        self._landed: str | None = None  # token of the batch whose spans are in, not yet done in the spool
        self._new_spans = 0  # spans of that batch the store did not hold before
        self._last_rows = 0  # of the last batch stored: a tenth of max_rows or more is a load
        self.backlog = DetectionBacklog(spool, store, counters, detect, bound_rows=backlog_bound_rows, retry_s=retry_s)
        self._thread = threading.Thread(target=self._run, name="infersight-spool-writer", daemon=True)

    def start(self) -> None:
        self.backlog.start()
        self._thread.start()

    def wake(self) -> None:
        """A new entry is in the spool: look now instead of at the next poll."""
        self._wake.set()

    def stop(self, drain_s: float = 5.0, interrupt: Callable[[], None] | None = None) -> None:
        """Stop after at most ``drain_s`` more seconds of draining. Blocks for at most
        ``drain_s`` + :data:`INSERT_GRACE_S` seconds.

        What is left stays in the spool and is drained at the next start, the analysis backlog
        too (its detections are computed then and stored under the batch's token). An insert
        that outlives the grace (a store that hangs) is abandoned to the daemon thread.
        ``interrupt``, called once the analysis is told to stop, cuts a detector run under way
        short (the decoder's close), so a stuck detector does not hold the stop for the grace.
        """
        self._drain_until = time.monotonic() + drain_s
        self._stop.set()
        self._wake.set()
        self.backlog.stop()
        if interrupt is not None:
            interrupt()
        self._thread.join(drain_s + INSERT_GRACE_S)
        self.backlog.join(INSERT_GRACE_S)

    def _fill(self) -> None:
        """Under load, let the next batch fill: wait until half a batch is waiting or the oldest
        waiting span is ``fill_s`` old (see the class). Returns at once when nothing waits."""
        if self._last_rows < max(self.max_rows // 10, 1):
            return
        until = time.monotonic() + self.fill_s  # also when the wall clock, which ages entries, jumps
        while not self._stop.is_set() and time.monotonic() < until:
            depth = self.spool.depth()
            if depth.rows == 0 or depth.rows >= self.max_rows // 2 or depth.oldest_age_s >= self.fill_s:
                return
            self._stop.wait(min(0.05, self.fill_s - depth.oldest_age_s))

    def _store(self, batch: Batch) -> None:
        # Once: a retry after the spool failed to record it is about the spool alone.
        if self._landed != batch.dedup_token:
            new = self._decided(batch)
            joined, pending = join_events(self.store, new.rows)  # what GenAI events stored already say
            self.store.insert("otel_traces", joined, dedup_token=new.dedup_token)
            self._landed = batch.dedup_token
            self._new_spans = len(new.keys)
            # Events stored between the join and the insert: this side completes them (step 2).
            detect = self.detect
            complete_calls(self.store, pending.after_insert(self.store),
                           None if detect is None else lambda rows: detect(rows, 1))

    def _decided(self, batch: Batch) -> Batch:
        """``batch`` less the spans the store already holds, decided once per batch.

        The decision is recorded in the spool before the insert (:meth:`Spool.decide`), so a
        retry inserts the same rows with the same token and ClickHouse drops whatever of them had
        landed, in every table, as before; and the detectors see only spans new to the store, so
        each span's detections are stored once too.
        """
        if batch.decided:
            return batch
        return self.spool.decide(batch, held_spans(self.store, batch.keys, batch.times))

    def _count_stored(self, batch: Batch) -> None:
        self.counters.add("spans_stored", self._new_spans)
        self.counters.add("spans_repeated", batch.row_count - self._new_spans)

    def _isolate(self, batch: Batch, exc: StoreError) -> bool:
        """The store refused ``batch`` for what it holds, not for its health: keep the rest moving.

        Two entries or more are halved (the spool claims the first half), so the refused entry
        is found in a few inserts while the others are stored. One entry alone is set aside in
        ``dead_letters`` with the reason and its project, whole, and leaves the spool. Returns
        ``False`` when that could not be done (the store or the spool failing now): retry later.
        """
        try:
            if batch.entries > 1:
                self.spool.split(batch)
            else:
                self._dead_letter(batch, exc)
        except (StoreError, SpoolError):
            logger.exception("cannot set aside the entries the store refuses; retrying")
            return False
        return True

    def _dead_letter(self, batch: Batch, exc: StoreError) -> None:
        (project,) = batch.projects
        row = {
            "project": project,
            "received": f"{batch.received_s:.3f}",
            "reason": str(exc)[:4000],
            "spans": batch.row_count,
            "rows": batch.rows.decode("utf-8", "replace"),
            "detections": batch.detections.decode("utf-8", "replace"),  # none: not analysed yet
        }
        self.store.insert("dead_letters", encode_rows([row]), dedup_token=batch.dedup_token + "dd")
        self.spool.done(batch)
        self.counters.add("spans_dead_lettered", batch.row_count)
        logger.error(
            "the store refused %d acknowledged spans of project %r; they are kept in dead_letters: %s",
            batch.row_count, project, exc,
        )

    def _run(self) -> None:
        delay = self.retry_s[0]
        failing_since: float | None = None
        while not (self._stop.is_set() and time.monotonic() >= self._drain_until):
            self._wake.clear()
            try:
                self._fill()
                batch = self.spool.next_batch(max_rows=self.max_rows, max_bytes=self.max_bytes)
            except SpoolError:
                logger.exception("cannot read the spool; retrying")
                self._stop.wait(self.retry_s[1])
                continue
            if batch is None:
                if self._stop.is_set():
                    return
                self._wake.wait(1.0)
                continue
            try:
                self._store(batch)
            except StoreError as exc:
                self.counters.add("store_errors")
                if not exc.transient and self._isolate(batch, exc):
                    delay = self.retry_s[0]
                    continue
                if failing_since is None:
                    failing_since = time.monotonic()
                    logger.warning("store insert failed, spans stay in the spool and are retried: %s", exc)
                if self._stop.wait(delay):
                    return  # stopping while the store is down: the spool keeps the batch
                delay = min(delay * 2, self.retry_s[1])
                continue
            try:
                self.spool.done(batch, analyse=True)
            except SpoolError:
                # Stored but not forgotten: the retry of this batch carries the same token and
                # the store drops it as a repeat.
                logger.exception("cannot delete stored entries from the spool; retrying")
                self._stop.wait(self.retry_s[1])
                continue
            self._count_stored(batch)
            self._landed = None
            self.backlog.wake()
            if failing_since is not None:
                logger.warning("store is back after %.1f s of failed inserts", time.monotonic() - failing_since)
                failing_since = None
            delay = self.retry_s[0]
            self._last_rows = batch.row_count
            # Under load, go straight on while half a batch or more is waiting; a trickle waits
            # so it still makes only a few inserts a second.
            if self.spool.depth().rows < self.max_rows // 2:
                self._stop.wait(self.min_interval_s)
