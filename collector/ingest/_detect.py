"""Inline detectors in the ingest pipeline: LLM outputs in ``otel_traces`` rows in,
``detections`` rows out.

Runs after the acknowledgement: the spool writer asks :meth:`~._decode.Decoder.detect` for the
detections of each batch it stores (in a low-priority worker process) and inserts them with the
batch's token, so they are stored exactly once and no detector ever delays an ack. A span that
repeats another's call (``_nesting``) gives its detections to the counted row's id, so a call
described twice is flagged once per detector by every reader (``store.call_detections``). Only rows
that carry an output (``gen_ai.output.messages``) are looked at, and an output larger than
:data:`MAX_OUTPUT_CHARS` is not looked at: every detector is linear, so that bounds one span's
detector time (~0.35 s at the slowest rate measured on hostile text). What is not analysed is
counted by reason (``NOT_ANALYSED_REASONS`` in ``_counters``) and project.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

from infersight.detectors import SpanText, messages_text, run_inline, schema_check
from infersight.sdk import semconv

from .._counters import TOO_LARGE
from ..store import encode_rows, span_finish_reasons
from ._nesting import counted_call

_OUTPUT_MARK = f'"{semconv.OUTPUT_MESSAGES}"'.encode()  # as encode_rows writes the key: a cheap filter on bytes
MAX_OUTPUT_CHARS = 1 << 20

NotAnalysed = dict[tuple[str, str], int]
"""Outputs not analysed, by (reason, project)."""


def _schema(attrs: dict[str, str]) -> dict[str, Any] | None:
    raw = attrs.get(semconv.JSON_SCHEMA)
    if not raw:
        return None
    try:
        schema = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return schema if isinstance(schema, dict) else None


def span_text(attrs: dict[str, str]) -> SpanText:
    """What the detectors see of a span, from its attributes (GenAI conventions plus ours)."""
    schema = _schema(attrs)
    reasons = span_finish_reasons(attrs)
    return SpanText(
        output_text=messages_text(attrs.get(semconv.OUTPUT_MESSAGES)),
        finish_reason=reasons[0] if reasons else "",
        finish_reasons=reasons,
        expect_json=attrs.get(semconv.OUTPUT_TYPE) == "json" or schema is not None,
        json_schema=schema,
        refusal_field=attrs.get(semconv.RESPONSE_REFUSAL) or None,
    )


def detections_for(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``detections`` rows for the LLM spans among ``otel_traces`` ``rows`` (as :func:`~._otlp.to_rows` makes them)."""
    return [found for row in rows for found in analyse(row)[0]]


def analyse(row: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """The ``detections`` rows of one ``otel_traces`` row, and why it was not (wholly) analysed:
    :data:`TOO_LARGE`, or the schema refusal of :func:`~infersight.detectors.schema_check`."""
    attrs = row.get("SpanAttributes") or {}
    if semconv.OUTPUT_MESSAGES not in attrs:
        return [], None
    if len(attrs[semconv.OUTPUT_MESSAGES]) > MAX_OUTPUT_CHARS:
        return [], TOO_LARGE
    span = span_text(attrs)
    refused = None if span.json_schema is None else schema_check(span.json_schema).refusal
    found = run_inline(span)
    if not found:
        return [], refused
    trace_id, span_id = counted_call(row)  # one call, one set of detections: the counted row's
    common = {
        "project": project_of(row),
        "ts": row["Timestamp"],
        "trace_id": trace_id,
        "span_id": span_id,
        "service": row.get("ServiceName", ""),
        "tenant": attrs.get(semconv.TENANT, ""),
        "route": attrs.get(semconv.ROUTE, ""),
        "model": attrs.get(semconv.RESPONSE_MODEL) or attrs.get(semconv.REQUEST_MODEL, ""),
    }
    return [
        {**common, "detector": d.detector, "version": d.version, "label": d.label, "score": d.score,
         "evidence": d.evidence}
        for d in found
    ], refused


def project_of(row: Mapping[str, Any]) -> str:
    return str((row.get("ResourceAttributes") or {}).get(semconv.PROJECT, ""))


def output_lines(rows: bytes) -> list[bytes]:
    """The JSONEachRow lines of ``rows`` that may carry an output (the ones worth analysing),
    without their newlines: a substring test on bytes, no parsing."""
    return [line for line in rows.split(b"\n") if _OUTPUT_MARK in line]


def has_output(rows: bytes) -> bool:
    """Whether any line of ``rows`` may carry an output, without splitting them."""
    return _OUTPUT_MARK in rows


def detect_lines(lines: Iterable[bytes], found: list[bytes], not_analysed: NotAnalysed,
                 progress: Callable[[int], None] | None = None) -> None:
    """Analyse ``otel_traces`` JSONEachRow ``lines`` one by one: their ``detections`` rows are
    appended to ``found`` and what was not analysed is counted in ``not_analysed``.
    ``progress(i)`` is called before line ``i``: a watchdog sees which line a stuck run is on."""
    for i, line in enumerate(lines):
        if not line:
            continue
        if progress is not None:
            progress(i)
        row = orjson.loads(line)
        rows, reason = analyse(row)
        if rows:
            found.append(encode_rows(rows))
        if reason is not None:
            count(not_analysed, reason, project_of(row))


def count(not_analysed: NotAnalysed, reason: str, project: str, outputs: int = 1) -> None:
    key = (reason, project)
    not_analysed[key] = not_analysed.get(key, 0) + outputs


def detect_rows(rows: bytes) -> tuple[bytes, NotAnalysed]:
    """``detections`` rows (JSONEachRow) for ``otel_traces`` rows (JSONEachRow), and the outputs
    not analysed, by (reason, project). In this process and thread, without a deadline."""
    found: list[bytes] = []
    not_analysed: NotAnalysed = {}
    detect_lines(output_lines(rows), found, not_analysed)
    return b"".join(found), not_analysed
