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
from ._events import (
    complete_calls,
    event_finish_reasons,
    fill_finish_reasons,
    join_events,
    span_finish_reason,
    span_finish_reasons,
)
from ._feedback import (
    JUDGE_PASS_SCORE,
    feedback_judge_agreement,
    feedback_rows,
    feedback_series,
    insert_feedback,
    negative_feedback_traces,
    trace_feedback,
)
from ._feedback import KINDS as FEEDBACK_KINDS
from ._histogram import bucket_value, histogram_sql, merge_histograms, percentiles
from ._kinds import KINDS, LLM, kind_of, operation_of, operations_of
from ._lease import LEASE_TTL_S, Lease, holder_name
from ._metrics import call_figures
from ._money import UNPRICED, spend_of, spend_sql, usd
from ._queries import PENDING_DEAD_LETTERS, call_detections, dead_letters, detections, queues, recent_spans, summary
from ._repeats import held_spans
from ._schema import cluster_statements, statements
from ._sessions import SESSION_COLUMNS, find_sessions, session_json, session_turns
from ._time import clickhouse_time, day_or_yesterday, shown, since_to_unix_ns
from ._trace_search import SORTS as TRACE_SORTS
from ._trace_search import SPAN_COLUMNS as TRACE_SPAN_COLUMNS
from ._trace_search import TraceSearch, find_traces
from ._users import find_users

__all__ = [
    "ChdbStore",
    "ClickHouseStore",
    "DataDirLocked",
    "FEEDBACK_KINDS",
    "JUDGE_PASS_SCORE",
    "KINDS",
    "LEASE_TTL_S",
    "LLM",
    "Lease",
    "PENDING_DEAD_LETTERS",
    "SESSION_COLUMNS",
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
    "complete_calls",
    "day_or_yesterday",
    "dead_letters",
    "detections",
    "encode_rows",
    "event_finish_reasons",
    "feedback_judge_agreement",
    "feedback_rows",
    "feedback_series",
    "fill_finish_reasons",
    "find_sessions",
    "find_traces",
    "find_users",
    "held_spans",
    "histogram_sql",
    "holder_name",
    "insert_error",
    "insert_feedback",
    "join_events",
    "kind_of",
    "merge_histograms",
    "negative_feedback_traces",
    "operation_of",
    "operations_of",
    "percentiles",
    "queues",
    "recent_spans",
    "session_json",
    "session_turns",
    "shown",
    "since_ns",
    "since_to_unix_ns",
    "span_finish_reason",
    "span_finish_reasons",
    "spend_of",
    "spend_sql",
    "statements",
    "summary",
    "trace_feedback",
    "usd",
    "usd_text",
]
