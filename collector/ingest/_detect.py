"""Inline detectors in the ingest pipeline: LLM outputs in ``otel_traces`` rows in,
``detections`` rows out.

Runs in the decode workers (:mod:`._decode`), before the request is acknowledged; the rows it
returns go into the same spool entry as the spans. Only rows that carry an output
(``gen_ai.output.messages``) are looked at.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from infersight.detectors import SpanText, messages_text, run_inline

_OUTPUT = "gen_ai.output.messages"


def _schema(attrs: dict[str, str]) -> dict[str, Any] | None:
    raw = attrs.get("infersight.json_schema")
    if not raw:
        return None
    try:
        schema = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return schema if isinstance(schema, dict) else None


def span_text(attrs: dict[str, str]) -> SpanText:
    """What the detectors see of a span, from its attributes (GenAI conventions plus ours)."""
    finish = attrs.get("gen_ai.response.finish_reasons", "")
    try:
        reasons = json.loads(finish) if finish.startswith("[") else [finish]
    except ValueError:
        reasons = []
    schema = _schema(attrs)
    return SpanText(
        output_text=messages_text(attrs.get(_OUTPUT)),
        finish_reason=str(reasons[0]) if reasons else "",
        expect_json=attrs.get("gen_ai.output.type") == "json" or schema is not None,
        json_schema=schema,
        refusal_field=attrs.get("gen_ai.response.refusal") or None,
    )


def detections_for(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``detections`` rows for the LLM spans among ``otel_traces`` ``rows`` (as :func:`~._otlp.to_rows` makes them)."""
    out: list[dict[str, Any]] = []
    for row in rows:
        attrs = row.get("SpanAttributes") or {}
        if _OUTPUT not in attrs:
            continue
        found = run_inline(span_text(attrs))
        if not found:
            continue
        resource = row.get("ResourceAttributes") or {}
        common = {
            "project": resource.get("infersight.project", ""),
            "ts": row["Timestamp"],
            "trace_id": row["TraceId"],
            "span_id": row["SpanId"],
            "service": row.get("ServiceName", ""),
            "tenant": attrs.get("infersight.tenant.id", ""),
            "route": attrs.get("infersight.route", ""),
            "model": attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model", ""),
        }
        out.extend(
            {**common, "detector": d.detector, "version": d.version, "label": d.label, "score": d.score,
             "evidence": d.evidence}
            for d in found
        )
    return out
