"""Finish reasons that only GenAI events carry (openai-v2 streams send them as OTLP logs, in
other requests than the span, before or after it): read beside the span when it has none."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from ._base import Store

# The first choice's reason, as llm_spans takes the first of gen_ai.response.finish_reasons; a
# resent logs request is stored once, but take one row per call whatever is there.
_REASONS = (
    "SELECT trace_id, span_id,"
    " argMin(JSONExtractString(finish_reasons, 1), (JSONExtractUInt(body, 'index'), ts)) AS finish_reason"
    " FROM genai_events WHERE project = {project:String} AND trace_id IN {traces:Array(String)}"
    " AND finish_reasons NOT IN ('', '[]') GROUP BY trace_id, span_id"
)


def event_finish_reasons(store: Store, project: str, calls: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The finish reason the GenAI events of each (trace id, span id) in ``calls`` carry, in the
    canonical spelling; calls without one are absent."""
    wanted = set(calls)
    if not wanted:
        return {}
    rows = store.query(_REASONS, {"project": project, "traces": sorted({trace for trace, _ in wanted})})
    found = {(row["trace_id"], row["span_id"]): str(row["finish_reason"]) for row in rows}
    return {key: reason for key, reason in found.items() if key in wanted and reason}


def fill_finish_reasons(
    store: Store, project: str, rows: Iterable[MutableMapping[str, Any]], trace_id: str | None = None
) -> None:
    """Give each of ``rows`` (with ``span_id``, ``finish_reason`` and, unless ``trace_id`` is
    given, ``trace_id``) whose ``finish_reason`` is empty the one its GenAI events carry."""
    missing = [row for row in rows if not row.get("finish_reason")]
    reasons = event_finish_reasons(store, project, (_key(row, trace_id) for row in missing))
    for row in missing:
        row["finish_reason"] = reasons.get(_key(row, trace_id), row.get("finish_reason") or "")


def _key(row: Mapping[str, Any], trace_id: str | None) -> tuple[str, str]:
    return (trace_id if trace_id is not None else str(row["trace_id"]), str(row["span_id"]))
