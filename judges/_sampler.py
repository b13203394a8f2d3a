"""Which spans get judged: deterministic on the trace id, stratified by tenant and route.

A span is sampled when ``trace_fraction(trace_id) < inclusion rate``, where ``trace_fraction`` is
a uniform number in [0, 1) from the MD5 of the trace id (the same in Python and in ClickHouse).
So the decision is reproducible, a trace is kept or dropped whole, and raising a rate only adds
spans to the sample, never swaps them.

The inclusion rate of a span in stratum (tenant, route) with ``n`` candidate spans in the window::

    stratum rate = max(rate, min(1, min_per_stratum / n))
    inclusion    = max(stratum rate, flagged_rate) if a detector flagged the span, else stratum rate

    inclusion    = max(inclusion, negative_feedback_rate) if a user gave its trace a thumbs down

so a small tenant or route gets about ``min_per_stratum`` judged spans per window (all of them
when it has fewer) instead of none, flagged spans are judged more often, and the calls users
turned down are judged always (by default): the judge's verdict on them is what a reviewer
wants next to the user's. Thumbs down given any time since the window began count, since
feedback comes after its call. The rate is stored with each score (``sample_rate``) so averages
can undo the stratification.

Spans of traces with a thumbs down come out first; the rest ordered by ``trace_fraction /
inclusion rate``, which is uniform within every stratum: when the daily budget cuts the list
short, every stratum loses the same share.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from infersight.collector.store import Store

from ._content import answer_text, parse_messages
from ._records import chunks
from ._types import JUDGE_ROUTE, SampledSpan

THUMBS = "thumbs"  # the feedback kind of a thumbs up (1) or down (0): sql/080_feedback.sql

FlaggedSpans = Callable[[str, int, int], Iterable[str]]
"""``(project, since_ns, until_ns) -> span ids`` flagged in that window, besides ``detections``."""

# Appended to the flagged expression when the detections table exists: a subquery keeps a busy
# week's detections inside ClickHouse instead of shipping their ids through Python.
_DETECTIONS_FLAG = (
    " OR span_id IN (SELECT span_id FROM detections WHERE project = {project:String}"
    " AND ts >= fromUnixTimestamp64Nano({since_ns:Int64}) AND ts < fromUnixTimestamp64Nano({until_ns:Int64}))"
)

_SAMPLE_SQL = """
SELECT toUnixTimestamp64Nano(ts) AS ts_ns, trace_id, span_id, tenant, route, service_version, model,
       flagged,
       greatest({rate:Float64}, least(1.0, {min_per_stratum:Float64} / stratum_size)) AS stratum_rate,
       if(flagged, greatest(stratum_rate, {flagged_rate:Float64}), stratum_rate) AS flagged_rate_of,
       if(disliked, greatest(flagged_rate_of, {negative_feedback_rate:Float64}), flagged_rate_of) AS inclusion_rate,
       u, disliked
FROM (
    SELECT ts, trace_id, span_id, tenant, route, service_version, model,
           count() OVER (PARTITION BY tenant, route) AS stratum_size,
           reinterpretAsUInt64(MD5(trace_id)) / 18446744073709551616 AS u,
           (has({flagged:Array(String)}, span_id)__DETECTIONS__) AS flagged,
           trace_id IN (SELECT trace_id FROM feedback WHERE project = {project:String} AND kind = {thumbs:String}
                        AND value < 0.5 AND ts >= fromUnixTimestamp64Nano({since_ns:Int64})) AS disliked
    FROM llm_spans
    WHERE project = {project:String}
      AND ts >= fromUnixTimestamp64Nano({since_ns:Int64}) AND ts < fromUnixTimestamp64Nano({until_ns:Int64})
      AND status = 'ok' AND route != {judge_route:String}
      AND kind = 'llm'  -- only model calls produce an answer to judge
)
WHERE u < inclusion_rate
ORDER BY NOT disliked, u / inclusion_rate, span_id
"""

_CONTENT_SQL = """
SELECT SpanId AS span_id,
       SpanAttributes['gen_ai.input.messages'] AS input_messages,
       SpanAttributes['gen_ai.output.messages'] AS output_messages,
       SpanAttributes['gen_ai.output.type'] AS output_type
FROM otel_traces
WHERE ResourceAttributes['infersight.project'] = {project:String}
  AND Timestamp >= fromUnixTimestamp64Nano({since_ns:Int64}) AND Timestamp <= fromUnixTimestamp64Nano({until_ns:Int64})
  AND TraceId IN {trace_ids:Array(String)} AND SpanId IN {span_ids:Array(String)}
"""


def trace_fraction(trace_id: str) -> float:
    """A uniform number in [0, 1) fixed by ``trace_id``: the first 8 bytes of its MD5, little-endian.

    ClickHouse computes the same number as ``reinterpretAsUInt64(MD5(trace_id)) / 2^64``.
    """
    digest = hashlib.md5(trace_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little") / 2**64


@dataclass(frozen=True, slots=True)
class SamplingPolicy:
    """How many spans to judge.

    Attributes:
        rate: base share of spans judged, in [0, 1].
        min_per_stratum: expected judged spans per (tenant, route) per window at least; a
            stratum with fewer spans than this is judged whole. 0 turns stratification off.
        flagged_rate: share of detector-flagged spans judged (at least the stratum's rate).
        negative_feedback_rate: share of spans judged whose trace a user gave a thumbs down
            (at least the other rates); they are judged first. 0 leaves feedback out.
    """

    rate: float = 0.02
    min_per_stratum: int = 3
    flagged_rate: float = 0.25
    negative_feedback_rate: float = 1.0

    def __post_init__(self) -> None:
        for name in ("rate", "flagged_rate", "negative_feedback_rate"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0.0 <= value <= 1.0:
                raise ValueError(f"The '{name}' parameter of SamplingPolicy must be within [0, 1]; got {value!r}.")
        if not isinstance(self.min_per_stratum, int) or self.min_per_stratum < 0:
            raise ValueError(
                "The 'min_per_stratum' parameter of SamplingPolicy must be an integer >= 0; "
                f"got {self.min_per_stratum!r}."
            )

    def inclusion_rate(self, stratum_size: int, flagged: bool = False) -> float:
        """The probability a span is sampled, for a stratum of ``stratum_size`` spans."""
        stratum = max(self.rate, min(1.0, self.min_per_stratum / stratum_size)) if stratum_size else self.rate
        return max(stratum, self.flagged_rate) if flagged else stratum


class Sampler:
    """Chooses the LLM spans of a time window to judge (see the module docstring for the rule).

    Args:
        store: where ``llm_spans`` and ``otel_traces`` live.
        policy: the rates.
        use_detections: a span with a row in the ``detections`` table (any detector, any
            label, in the window) is flagged.
        flagged: more flagged span ids for a window, from anywhere else
            (``lambda project, since_ns, until_ns: ids``).

    Blocking (it queries the store); holds no state between calls, so it is thread-safe.
    Only successful spans of LLM operations are candidates, never the judge's own calls.
    """

    def __init__(self, store: Store, policy: SamplingPolicy | None = None, *,
                 use_detections: bool = True, flagged: FlaggedSpans | None = None) -> None:
        self.store = store
        self.policy = policy or SamplingPolicy()
        self.use_detections = use_detections
        self.flagged = flagged

    def sample(self, project: str, since_ns: int, until_ns: int) -> list[SampledSpan]:
        """The sampled spans of ``[since_ns, until_ns)``, in budget order, without their content."""
        flagged_ids = sorted(set(self.flagged(project, since_ns, until_ns))) if self.flagged else []
        sql = _SAMPLE_SQL.replace("__DETECTIONS__", _DETECTIONS_FLAG if self.use_detections else "")
        rows = self.store.query(sql, {
            "project": project, "since_ns": since_ns, "until_ns": until_ns, "judge_route": JUDGE_ROUTE,
            "rate": float(self.policy.rate), "min_per_stratum": float(self.policy.min_per_stratum),
            "flagged_rate": float(self.policy.flagged_rate), "flagged": list(flagged_ids),
            "negative_feedback_rate": float(self.policy.negative_feedback_rate), "thumbs": THUMBS,
        })
        return [
            SampledSpan(
                project=project, ts_ns=int(r["ts_ns"]), trace_id=r["trace_id"], span_id=r["span_id"],
                tenant=r["tenant"], route=r["route"], service_version=r["service_version"], model=r["model"],
                sample_rate=float(r["inclusion_rate"]), flagged=bool(r["flagged"]),
            )
            for r in rows
        ]

    def with_content(self, spans: Sequence[SampledSpan]) -> list[SampledSpan]:
        """``spans`` with their messages and answer read from ``otel_traces`` (order kept).

        Spans whose content was not captured come back without it (``has_content`` is False).
        """
        return load_content(self.store, spans)


def load_content(store: Store, spans: Sequence[SampledSpan]) -> list[SampledSpan]:
    """Fill in ``messages`` and ``answer`` of ``spans`` from ``otel_traces``, keeping their order."""
    if not spans:
        return []
    found: dict[str, dict[str, str]] = {}
    by_project: dict[str, list[SampledSpan]] = {}
    for span in spans:
        by_project.setdefault(span.project, []).append(span)
    for project, group in by_project.items():
        for part in chunks(group, 1000):
            rows = store.query(_CONTENT_SQL, {
                "project": project,
                "since_ns": min(s.ts_ns for s in part),
                "until_ns": max(s.ts_ns for s in part),
                "trace_ids": sorted({s.trace_id for s in part}),
                "span_ids": [s.span_id for s in part],
            })
            found.update({r["span_id"]: r for r in rows})
    out = []
    for span in spans:
        row = found.get(span.span_id, {})
        out.append(replace(
            span, messages=parse_messages(row.get("input_messages", "")),
            answer=answer_text(row.get("output_messages", "")), expects_json=row.get("output_type") == "json",
        ))
    return out
