"""Reading and writing the judges' tables: ``judge_scores``, ``judge_calls`` (the spend ledger).

Every function blocks on the store and may be called from any thread (the store serialises).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from infersight.collector.store import Store, encode_rows
from infersight.detectors import row_time_text

from ._rubrics import Rubric
from ._types import SampledSpan, Verdict

PURPOSE_SAMPLE = "sample"
PURPOSE_PANEL = "panel"
OUTCOME_OK = "ok"
_CHUNK = 2000
T = TypeVar("T")


def chunks(values: Sequence[T], size: int = _CHUNK) -> Iterable[Sequence[T]]:
    for start in range(0, len(values), size):
        yield values[start:start + size]


def score_row(span: SampledSpan, rubric: Rubric, verdict: Verdict, source: str,
              judged_at_ns: int | None = None) -> dict[str, Any]:
    return {
        "project": span.project,
        "ts": row_time_text(span.ts_ns),
        "judged_at": row_time_text(judged_at_ns if judged_at_ns is not None else time.time_ns()),
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "tenant": span.tenant,
        "route": span.route,
        "service_version": span.service_version,
        "judge_model": verdict.judge_model,
        "rubric_id": rubric.id,
        "rubric_version": rubric.version,
        "score": verdict.score,
        "reason": verdict.reason,
        "judge_cost_usd": verdict.cost_usd,
        "judge_latency_s": verdict.latency_s,
        "sample_rate": span.sample_rate,
        "source": source,
    }


def call_row(span: SampledSpan, rubric: Rubric, judge_model: str, purpose: str, outcome: str, *,
             attempts: int, input_tokens: int = 0, output_tokens: int = 0, cost_usd: float | None = None,
             latency_s: float = 0.0, error: str = "", ts_ns: int | None = None) -> dict[str, Any]:
    return {
        "project": span.project,
        "ts": row_time_text(ts_ns if ts_ns is not None else time.time_ns()),
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "judge_model": judge_model,
        "rubric_id": rubric.id,
        "rubric_version": rubric.version,
        "purpose": purpose,
        "outcome": outcome,
        "attempts": attempts,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cost_usd": cost_usd,
        "latency_s": latency_s,
        "error": error[:500],
    }


def write(store: Store, scores: list[dict[str, Any]], calls: list[dict[str, Any]]) -> None:
    """Append score and ledger rows (each list as one insert)."""
    if scores:
        store.insert("judge_scores", encode_rows(scores))
    if calls:
        store.insert("judge_calls", encode_rows(calls))


def answered_span_ids(store: Store, project: str, span_ids: Sequence[str], judge_model: str,
                      rubric: Rubric) -> set[str]:
    """Which of ``span_ids`` this judge already answered for this rubric version.

    An invalid verdict counts as answered (the judge did reply, and was paid): such spans are
    not judged again with the same judge and rubric. Transient failures are retried later.
    """
    out: set[str] = set()
    for part in chunks(span_ids):
        rows = store.query(
            "SELECT DISTINCT span_id FROM judge_calls"
            " WHERE project = {project:String} AND judge_model = {model:String}"
            " AND rubric_id = {rubric:String} AND rubric_version = {version:UInt32}"
            " AND outcome IN ('ok', 'invalid_verdict') AND has({ids:Array(String)}, span_id)",
            {"project": project, "model": judge_model, "rubric": rubric.id, "version": rubric.version,
             "ids": list(part)},
        )
        out.update(r["span_id"] for r in rows)
    return out


def existing_scores(store: Store, project: str, span_ids: Sequence[str], judge_model: str,
                    rubric: Rubric) -> dict[str, dict[str, Any]]:
    """The latest stored score per span for this judge and rubric version: reused by comparisons."""
    out: dict[str, dict[str, Any]] = {}
    for part in chunks(span_ids):
        rows = store.query(
            "SELECT span_id, argMax(score, judged_at) AS score, argMax(reason, judged_at) AS reason"
            " FROM judge_scores"
            " WHERE project = {project:String} AND judge_model = {model:String}"
            " AND rubric_id = {rubric:String} AND rubric_version = {version:UInt32}"
            " AND has({ids:Array(String)}, span_id) GROUP BY span_id",
            {"project": project, "model": judge_model, "rubric": rubric.id, "version": rubric.version,
             "ids": list(part)},
        )
        out.update({r["span_id"]: r for r in rows})
    return out


def spend_today(store: Store, project: str, purpose: str = PURPOSE_SAMPLE,
                now_s: float | None = None) -> tuple[int, float, int, int]:
    """(HTTP calls, known dollars, calls with a known cost, answered calls without one) since
    00:00 UTC today, for ``purpose``."""
    now = time.time() if now_s is None else now_s
    day_start_ns = int(now // 86400 * 86400) * 1_000_000_000
    row = store.query(
        "SELECT sum(attempts) AS calls, sum(ifNull(cost_usd, 0)) AS usd, countIf(cost_usd IS NOT NULL) AS costed,"
        " countIf(cost_usd IS NULL AND outcome IN ('ok', 'invalid_verdict')) AS uncosted"
        " FROM judge_calls WHERE project = {project:String} AND purpose = {purpose:String}"
        " AND ts >= fromUnixTimestamp64Nano({since_ns:Int64})",
        {"project": project, "purpose": purpose, "since_ns": day_start_ns},
    )[0]
    return int(row["calls"] or 0), float(row["usd"] or 0.0), int(row["costed"] or 0), int(row["uncosted"] or 0)


def recent_scores(store: Store, project: str, since_ns: int, limit: int = 1000) -> list[dict[str, Any]]:
    """Judge scores of spans since ``since_ns``, newest first, at most ``limit`` (the JSON API's rows)."""
    return store.query(
        "SELECT ts, judged_at, trace_id, span_id, tenant, route, service_version, judge_model, rubric_id,"
        " rubric_version, score, reason, judge_cost_usd, judge_latency_s, sample_rate, source"
        " FROM judge_scores"
        " WHERE project = {project:String} AND ts >= fromUnixTimestamp64Nano({since_ns:Int64})"
        " ORDER BY ts DESC, span_id LIMIT {limit:UInt32}",
        {"project": project, "since_ns": since_ns, "limit": limit},
    )


def judge_spend(store: Store, project: str, since_ns: int) -> list[dict[str, Any]]:
    """The judge's own spend per UTC day, judge model and purpose since ``since_ns``.

    ``usd`` sums the calls with a known price; ``uncosted_calls`` counts the rest.
    """
    return store.query(
        # The zone named: a server loads a table's columns in its own zone, whatever the session's.
        "SELECT toString(toDate(ts, 'UTC')) AS day, judge_model, purpose,"
        " count() AS judgements, sum(attempts) AS calls, countIf(outcome = 'ok') AS scored,"
        " countIf(outcome != 'ok') AS failed, sum(input_tokens) AS input_tokens,"
        " sum(output_tokens) AS output_tokens, sum(ifNull(cost_usd, 0)) AS usd,"
        " countIf(cost_usd IS NULL) AS uncosted_calls"
        " FROM judge_calls"
        " WHERE project = {project:String} AND ts >= fromUnixTimestamp64Nano({since_ns:Int64})"
        " GROUP BY day, judge_model, purpose ORDER BY day, judge_model, purpose",
        {"project": project, "since_ns": since_ns},
    )


def scores_summary(store: Store, project: str, since_ns: int) -> list[dict[str, Any]]:
    """Mean score per route, app version, judge model and rubric version, weighted by the sampling
    design (``1 / sample_rate``), with the unweighted mean and the count beside it."""
    return store.query(
        "SELECT route, service_version, judge_model, rubric_id, rubric_version, count() AS scores,"
        " avg(score) AS mean_score, sum(score / sample_rate) / sum(1 / sample_rate) AS weighted_mean_score"
        " FROM judge_scores"
        " WHERE project = {project:String} AND ts >= fromUnixTimestamp64Nano({since_ns:Int64})"
        " GROUP BY route, service_version, judge_model, rubric_id, rubric_version"
        " ORDER BY route, service_version, judge_model, rubric_id, rubric_version",
        {"project": project, "since_ns": since_ns},
    )
