"""Inline detectors in the ingest pipeline: LLM outputs in ``otel_traces`` rows in,
``detections`` rows out.

Runs after the acknowledgement: the spool writer asks :meth:`~._decode.Decoder.detect` for the
detections of each batch it stores (in a low-priority worker process) and inserts them with the
batch's token, so they are stored exactly once and no detector ever delays an ack. Only rows
that carry an output (``gen_ai.output.messages``) are looked at, and an output larger than
:data:`MAX_OUTPUT_CHARS` is not looked at: every detector is linear, so that bounds one span's
detector time (~0.35 s at the slowest rate measured on hostile text).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from infersight.detectors import SpanText, messages_text, run_inline

from ..store import encode_rows

_OUTPUT = "gen_ai.output.messages"
_OUTPUT_MARK = b'"gen_ai.output.messages"'  # as encode_rows writes the key: a cheap filter on bytes
MAX_OUTPUT_CHARS = 1 << 20


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
        if _OUTPUT not in attrs or len(attrs[_OUTPUT]) > MAX_OUTPUT_CHARS:
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


def output_rows(rows: bytes) -> bytes:
    """The JSONEachRow lines of ``rows`` that may carry an output (the ones worth shipping to
    a detector process): a substring test on bytes, no parsing."""
    return b"".join(line + b"\n" for line in rows.split(b"\n") if _OUTPUT_MARK in line)


def detect_rows(rows: bytes) -> tuple[bytes, int]:
    """``detections`` rows (JSONEachRow) for ``otel_traces`` rows (JSONEachRow), and how many
    outputs were over :data:`MAX_OUTPUT_CHARS` and not analysed."""
    parsed = [orjson.loads(line) for line in rows.split(b"\n") if line.strip()]
    skipped = sum(
        1 for row in parsed if len((row.get("SpanAttributes") or {}).get(_OUTPUT, "")) > MAX_OUTPUT_CHARS
    )
    return encode_rows(detections_for(parsed)), skipped
