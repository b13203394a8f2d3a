"""The spool writer: one background thread moving acknowledged spans from the spool to the store."""

from __future__ import annotations

import logging
import threading
import time

from ._errors import SpoolError, StoreError
from ._metrics import Counters
from ._spool import Spool
from ._store import Store

logger = logging.getLogger("infersight.collector")


class SpoolWriter:
    """Drains ``spool`` into ``store``'s ``otel_traces``, oldest first, in merged batches.

    Args:
        max_rows, max_bytes: the largest batch; several requests become one insert, because
            ClickHouse wants few large inserts, not one small part per request (an insert of
            20,000 spans costs ~25% less CPU per span than one of 5,000, merges included).
        min_interval_s: unless half a batch or more is waiting, the next insert waits this long
            after the previous one, so a trickle of requests still makes a few inserts a second.
        retry_s: (first, longest) wait after a failed insert; the wait doubles up to the longest.
            The failed batch stays in the spool and is retried as it was, same token.
        counters: where ``spans_stored``, ``detections`` and ``store_errors`` are counted.

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
        max_bytes: int = 16 << 20,
        min_interval_s: float = 0.2,
        retry_s: tuple[float, float] = (0.1, 5.0),
    ) -> None:
        self.spool = spool
        self.store = store
        self.counters = counters
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.min_interval_s = min_interval_s
        self.retry_s = retry_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._drain_until = 0.0
        self._thread = threading.Thread(target=self._run, name="infersight-spool-writer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """A new entry is in the spool: look now instead of at the next poll."""
        self._wake.set()

    def stop(self, drain_s: float = 5.0) -> None:
        """Stop after at most ``drain_s`` more seconds of draining. Blocks until stopped.

        What is left stays in the spool and is drained at the next start.
        """
        self._drain_until = time.monotonic() + drain_s
        self._stop.set()
        self._wake.set()
        self._thread.join(drain_s + 30.0)  # an insert already under way is allowed to finish

    def _run(self) -> None:
        delay = self.retry_s[0]
        failing_since: float | None = None
        while not (self._stop.is_set() and time.monotonic() >= self._drain_until):
            self._wake.clear()
            try:
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
                self.store.insert("otel_traces", batch.rows, dedup_token=batch.dedup_token)
                if batch.detections:
                    # Same batch, own token (still hex): a replay drops both repeats.
                    self.store.insert("detections", batch.detections, dedup_token=batch.dedup_token + "de")
            except StoreError as exc:
                self.counters.add("store_errors")
                if failing_since is None:
                    failing_since = time.monotonic()
                    logger.warning("store insert failed, spans stay in the spool and are retried: %s", exc)
                if self._stop.wait(delay):
                    return  # stopping while the store is down: the spool keeps the batch
                delay = min(delay * 2, self.retry_s[1])
                continue
            try:
                self.spool.done(batch)
            except SpoolError:
                # Stored but not forgotten: the retry of this batch carries the same token and
                # the store drops it as a repeat.
                logger.exception("cannot delete stored entries from the spool; retrying")
                self._stop.wait(self.retry_s[1])
                continue
            self.counters.add("spans_stored", batch.row_count)
            if batch.detections:
                self.counters.add("detections", batch.detections.count(b"\n"))
            if failing_since is not None:
                logger.warning("store is back after %.1f s of failed inserts", time.monotonic() - failing_since)
                failing_since = None
            delay = self.retry_s[0]
            # Under load, go straight on while half a batch or more is waiting; a trickle waits
            # so it still makes only a few inserts a second.
            if self.spool.depth().rows < self.max_rows // 2:
                self._stop.wait(self.min_interval_s)
