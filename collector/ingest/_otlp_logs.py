"""OTLP/HTTP log requests: the GenAI events among them into ``genai_events`` rows.

Some instrumentations record part of a call as OpenTelemetry events (log records with an event
name and the span's context) instead of span attributes: openai-v2 (``opentelemetry-
instrumentation-openai-v2`` 2.x) writes the prompt as ``gen_ai.{system,user,assistant,tool}.message``,
each answer as ``gen_ai.choice`` (its finish reason, and its content when the app captures
content) and, under the latest conventions, the whole call as
``gen_ai.client.inference.operation.details``. A stream's span of openai-v2's default mode carries
no finish reason; only its ``gen_ai.choice`` event does.

Each event is stored with the (trace id, span id) of its span, which is how a reader finds the
events of a span: they arrive in another request than the span (another signal, another
exporter), before or after it; whichever of the two is stored second completes the call (its
finish reason, and its answer, reach the span's ``llm_spans`` row and the inline detectors:
``store.join_events``, ``store.complete_calls``). Records without a span context, or not named
as GenAI events, are accepted and not stored. Content is stored only as the event carries it: the instrumentation
leaves it out unless the app turned content capture on, the same rule as for span attributes.
"""

from __future__ import annotations

from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from infersight.detectors import row_time_text
from infersight.sdk import semconv

from .._settings import IngestWindow
from ..errors import BadRequest
from ._normalize import finish_reasons_json
from ._otlp import PROTOBUF, _any_to_python, _attributes, _convert, _dict, _list

# Event names that belong to a model call: the GenAI conventions' and the first-chunk events
# other packages record (which give TTFT when they come as log records).
_GENAI_PREFIX = "gen_ai."
_FIRST_CHUNK_EVENTS = frozenset({"First Token Stream Event", "llm.content.completion.chunk"})


def parse_logs(body: bytes, media: str) -> ExportLogsServiceRequest:
    """Decode an ``ExportLogsServiceRequest``; :class:`BadRequest` says what is wrong."""
    request = ExportLogsServiceRequest()
    if not body.strip():
        return request
    if media == PROTOBUF:
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            raise BadRequest(f"body is not a valid OTLP ExportLogsServiceRequest protobuf: {exc}") from exc
        return request
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"body is not valid JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise BadRequest("body must be a JSON object with 'resourceLogs'")
    _hex_ids_to_base64(document)
    try:
        json_format.ParseDict(document, request, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise BadRequest(f"body is not a valid OTLP/JSON ExportLogsServiceRequest: {exc}") from exc
    return request


def _hex_ids_to_base64(document: dict[str, Any]) -> None:
    # OTLP/JSON writes ids as hex, where protobuf's JSON mapping expects base64 for bytes.
    for r, resource_logs in enumerate(_list(document.get("resourceLogs"))):
        for s, scope_logs in enumerate(_list(_dict(resource_logs).get("scopeLogs"))):
            for i, record in enumerate(_list(_dict(scope_logs).get("logRecords"))):
                _convert(_dict(record), ("traceId", "spanId"), f"resourceLogs[{r}].scopeLogs[{s}].logRecords[{i}]")


def event_rows(
    request: ExportLogsServiceRequest,
    project: str,
    rejected: list[str] | None = None,
    *,
    window: IngestWindow | None = None,
) -> list[dict[str, Any]]:
    """One ``genai_events`` row per GenAI event with a span context, stamped with ``project``.

    An event's time is its own, else when it was observed. Events outside ``window`` are left
    out, and why is appended to ``rejected``: stored, they would fail the insert.
    """
    window = window or IngestWindow()
    earliest, latest = window.bounds_ns()
    rows: list[dict[str, Any]] = []
    for resource_logs in request.resource_logs:
        service = next((kv.value.string_value for kv in resource_logs.resource.attributes
                        if kv.key == "service.name"), "")
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                name = record.event_name or _attribute(record, "event.name")
                if not _is_genai(name) or len(record.trace_id) != 16 or len(record.span_id) != 8:
                    continue
                at = record.time_unix_nano or record.observed_time_unix_nano
                if not earliest <= at <= latest:
                    if rejected is not None:
                        rejected.append(f"event {name!r} of span {record.span_id.hex()}: time {at} is unset "
                                        "or outside the ingest window")
                    continue
                attributes = _attributes(record.attributes)
                body = _any_to_python(record.body) if record.HasField("body") else None
                rows.append({
                    "project": project, "ts": row_time_text(at), "trace_id": record.trace_id.hex(),
                    "span_id": record.span_id.hex(), "service": service, "event_name": name,
                    "attributes": attributes, "body": "" if body is None else orjson.dumps(body).decode(),
                    "finish_reasons": _finish_reasons(name, attributes, body),
                })
    return rows


def _attribute(record: Any, key: str) -> str:
    # Before LogRecord had event_name, the event's name was this attribute.
    return next((kv.value.string_value for kv in record.attributes if kv.key == key), "")


def _is_genai(name: str) -> bool:
    return name.startswith(_GENAI_PREFIX) or name in _FIRST_CHUNK_EVENTS


def _finish_reasons(name: str, attributes: dict[str, str], body: Any) -> str:
    """The event's finish reasons as ``gen_ai.response.finish_reasons`` writes them, or ``""``."""
    if name == "gen_ai.choice" and isinstance(body, dict) and isinstance(reason := body.get("finish_reason"), str):
        return finish_reasons_json([reason])
    raw = attributes.get(semconv.FINISH_REASONS, "")
    try:
        reasons = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        return ""
    if isinstance(reasons, list) and all(isinstance(r, str) for r in reasons) and reasons:
        return finish_reasons_json(reasons)
    return ""

