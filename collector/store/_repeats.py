"""Which spans the store already holds: what makes a resent span a repeat instead of a new row.

A span is identified by (project, TraceId, SpanId). ``otel_traces`` keeps the OpenTelemetry
Collector exporter's DDL (a plain MergeTree), so repeats are found before the insert, and every
table a materialized view fills from it (``llm_spans``, the rollups) stays exact without its
readers doing anything. The lookups read only the parts whose time range meets the batch's
(``Timestamp`` is the partition key's column) and, in them, only the granules whose ``TraceId``
bloom filter may hold one of the batch's traces, and of those rows first only the trace ids: a
batch's spans start within the same minute or so as the stored ones it is checked against, so
the time range selects nearly every recent row, and left to choose, ClickHouse filtered on the
(small) time column first and then read every such row's trace id and resource map. Filtering
on the trace ids first halves the lookup of a 20,000-span batch among 400,000 spans of its
minute (0.30 -> 0.16 s); the map is read only for the rows whose trace is in the batch.

A batch is looked up in time groups, split where its spans' start times leave more than
:data:`GROUP_GAP_NS` between them: one span that started an hour before the rest (an agent
session's root, ending now) would otherwise stretch the range to every span of that hour. With
400,000 spans in the hour, one such span took a 20,000-span batch's lookup from 0.11-0.14 s to
0.21-0.25 s in one range, and to 0.14-0.20 s in groups (its own group: 8 ms); in one range the
cost grows with the hour's spans (at 20,000 spans a second, 72 million trace ids a batch), in
groups it does not.

A time group is one query for up to :data:`TRACES_PER_LOOKUP` traces, not one per few thousand:
each query reads every trace id of the range, so five queries for a 20,000-span batch read the
range five times (0.15-0.21 s against 0.06-0.08 for one, among 245,000 spans of its minute). The
ids travel as :func:`~._id_lists.id_array` sends long lists, within what a server takes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ._base import Store
from ._id_lists import IDS_PER_PARAMETER, id_array

SpanKey = tuple[str, str, str]
"""(project, TraceId, SpanId), the ids in ``otel_traces``' hex."""

TRACES_PER_LOOKUP = 6 * IDS_PER_PARAMETER
"""Trace ids per query: a writer's batch (20,000 spans at most) takes one."""
GROUP_GAP_NS = 60 * 10**9
"""A batch's spans whose start times are further apart than this are looked up apart."""
MAX_GROUPS = 8
"""At most this many time groups a batch (split at its widest gaps): each is a query more."""

_HELD_SPANS = """
SELECT DISTINCT ResourceAttributes['infersight.project'] AS project, TraceId AS trace_id, SpanId AS span_id
FROM otel_traces
PREWHERE TraceId IN (SELECT arrayJoin({traces}))
WHERE Timestamp BETWEEN fromUnixTimestamp64Nano({{first_ns:Int64}}) AND fromUnixTimestamp64Nano({{last_ns:Int64}})
    AND ResourceAttributes['infersight.project'] IN {{projects:Array(String)}}
"""


def held_spans(store: Store, keys: Sequence[SpanKey | None], times: Sequence[int]) -> set[SpanKey]:
    """The spans among ``keys`` that ``otel_traces`` already holds; ``times`` are their
    ``Timestamp`` values, Unix nanoseconds, one per key (a resent span has its first copy's
    start time). ``None`` keys are skipped. Blocks on one query per time group (at most
    :data:`MAX_GROUPS`) and :data:`TRACES_PER_LOOKUP` traces; raises :class:`StoreError`."""
    known = [(t, key) for key, t in zip(keys, times, strict=True) if key is not None]
    held: set[SpanKey] = set()
    for ts_range, group in _time_groups(known):
        held |= _held(store, group, ts_range)
    return held


def _time_groups(known: list[tuple[int, SpanKey]]) -> list[tuple[tuple[int, int], list[SpanKey]]]:
    """``known`` (time, key) pairs as (time range, keys) groups, cut at the widest gaps of over
    :data:`GROUP_GAP_NS` between start times, at most :data:`MAX_GROUPS` of them."""
    if not known:
        return []
    first, last = min(t for t, _ in known), max(t for t, _ in known)
    if last - first <= GROUP_GAP_NS:  # the usual batch: one group, and no sort
        return [((first, last), [key for _, key in known])]
    known = sorted(known)
    gaps = sorted(((known[i + 1][0] - known[i][0], i + 1) for i in range(len(known) - 1)
                   if known[i + 1][0] - known[i][0] > GROUP_GAP_NS), reverse=True)[:MAX_GROUPS - 1]
    cuts = sorted(at for _, at in gaps)
    return [((known[a][0], known[b - 1][0]), [key for _, key in known[a:b]])
            for a, b in zip([0, *cuts], [*cuts, len(known)], strict=True)]


def _held(store: Store, keys: Iterable[SpanKey], ts_range_ns: tuple[int, int]) -> set[SpanKey]:
    wanted = set(keys)
    if not wanted:
        return set()
    projects = sorted({key[0] for key in wanted})
    traces = sorted({key[1] for key in wanted})
    held: set[SpanKey] = set()
    for start in range(0, len(traces), TRACES_PER_LOOKUP):
        in_traces, params = id_array("traces", traces[start:start + TRACES_PER_LOOKUP])
        sql = _HELD_SPANS.format(traces=in_traces)
        for row in store.query(sql, {**params, "first_ns": ts_range_ns[0], "last_ns": ts_range_ns[1],
                                         "projects": projects}):
            key = (row["project"], row["trace_id"], row["span_id"])
            if key in wanted:
                held.add(key)
    return held
