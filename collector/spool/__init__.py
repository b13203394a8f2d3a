"""Between the acknowledgement and the store: the durable spool and the writer that drains it.

A 200 to an exporter means its spans are committed here (SQLite, fsynced); the writer moves
them into ``otel_traces`` in merged batches, exactly once across crashes, and sets aside what
the store refuses so that nothing blocks the spans behind it.
"""

from __future__ import annotations

from ._replay import ReplayOutcome, pending_dead_letters, replay_dead_letters
from ._spool import MAX_DAYS, Batch, Entry, Spool, SpoolDepth
from ._writer import SpoolWriter

__all__ = [
    "Batch",
    "Entry",
    "MAX_DAYS",
    "ReplayOutcome",
    "Spool",
    "SpoolDepth",
    "SpoolWriter",
    "pending_dead_letters",
    "replay_dead_letters",
]
