"""The store: ClickHouse tables holding spans and everything derived from them.

Two backends with one protocol, :class:`Store` (insert JSONEachRow, run a SELECT with bound
parameters): :class:`ChdbStore`, the engine in-process, and :class:`ClickHouseStore`, a server
or cluster through clickhouse-connect. The schema (``sql/*.sql``), row encoding, the read
queries every surface shares, and the time-range helpers live here too.

Dashboards, judges, alerts and detectors read through this package. It imports no web code:
importing it does not import FastAPI, the app or the CLI.
"""

from __future__ import annotations

from infersight.detectors import usd_text  # the one text form of money, served beside the sums

from ..errors import DataDirLocked, StoreError
from ._base import Store, encode_rows, insert_error
from ._chdb import ChdbStore
from ._checks import check_choice, check_text, since_ns
from ._clickhouse import ClickHouseStore
from ._events import event_finish_reasons, fill_finish_reasons
from ._histogram import bucket_value, histogram_sql, merge_histograms, percentiles
from ._kinds import KINDS, LLM, kind_of, operation_of, operations_of
from ._lease import LEASE_TTL_S, Lease, holder_name
from ._metrics import call_figures
from ._money import UNPRICED, spend_of, spend_sql, usd
from ._queries import PENDING_DEAD_LETTERS, call_detections, dead_letters, detections, queues, recent_spans, summary
from ._repeats import held_spans
from ._schema import cluster_statements, statements
from ._time import clickhouse_time, day_or_yesterday, shown, since_to_unix_ns
from ._trace_search import SORTS as TRACE_SORTS
from ._trace_search import SPAN_COLUMNS as TRACE_SPAN_COLUMNS
from ._trace_search import TraceSearch, find_traces

__all__ = [
    "ChdbStore",
    "ClickHouseStore",
    "DataDirLocked",
    "KINDS",
    "LEASE_TTL_S",
    "LLM",
    "Lease",
    "PENDING_DEAD_LETTERS",
    "Store",
    "StoreError",
    "TRACE_SORTS",
    "TRACE_SPAN_COLUMNS",
    "TraceSearch",
    "UNPRICED",
    "bucket_value",
    "call_detections",
    "call_figures",
    "check_choice",
    "check_text",
    "clickhouse_time",
    "cluster_statements",
    "day_or_yesterday",
    "dead_letters",
    "detections",
    "encode_rows",
    "event_finish_reasons",
    "fill_finish_reasons",
    "find_traces",
    "held_spans",
    "histogram_sql",
    "holder_name",
    "insert_error",
    "kind_of",
    "merge_histograms",
    "operation_of",
    "operations_of",
    "percentiles",
    "queues",
    "recent_spans",
    "shown",
    "since_ns",
    "since_to_unix_ns",
    "spend_of",
    "spend_sql",
    "statements",
    "summary",
    "usd",
    "usd_text",
]
