"""OTLP/HTTP trace requests: decode protobuf or JSON bodies (gzip too) into ``otel_traces`` rows.

Rows follow the OpenTelemetry Collector's ClickHouse exporter: hex ids, kind and status as
``Client``/``Error`` strings, attribute values flattened to strings (arrays and maps as JSON).
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Sequence
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from infersight.detectors import row_time_day, row_time_text
from infersight.sdk import semconv

from .._settings import DAY_NS, IngestWindow
from ..errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from ._enrich import add_cost
from ._nesting import mark_same_calls
from ._normalize import normalize

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

_KIND = {0: "Unspecified", 1: "Internal", 2: "Server", 3: "Client", 4: "Producer", 5: "Consumer"}
_STATUS = {0: "Unset", 1: "Ok", 2: "Error"}


def media_type(content_type: str | None) -> str:
    """The body's media type, or :class:`UnsupportedMediaType` for anything but protobuf and JSON."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in (PROTOBUF, JSON):
        return media
    raise UnsupportedMediaType(
        f"Content-Type must be {PROTOBUF} or {JSON}; got {content_type or 'nothing'!r}"
    )


def decompress(body: bytes, content_encoding: str | None, limit_bytes: int) -> bytes:
    """Undo ``Content-Encoding: gzip`` without ever holding more than ``limit_bytes`` (gzip bombs)."""
    encoding = (content_encoding or "identity").strip().lower()
    if encoding == "identity":
        if len(body) > limit_bytes:
            raise PayloadTooLarge(f"body is {len(body)} bytes; the limit is {limit_bytes}")
        return body
    if encoding not in ("gzip", "deflate"):
        raise UnsupportedMediaType(f"Content-Encoding must be gzip or identity; got {encoding!r}")
    wbits = 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(body, limit_bytes + 1)
    except zlib.error as exc:
        raise BadRequest(f"body is not valid {encoding}: {exc}") from exc
    if len(out) > limit_bytes or inflater.unconsumed_tail:
        raise PayloadTooLarge(f"body inflates to more than the limit of {limit_bytes} bytes")
    if not inflater.eof:
        raise BadRequest(f"body is truncated {encoding}")
    return out


def parse_traces(body: bytes, media: str) -> ExportTraceServiceRequest:
    """Decode an ``ExportTraceServiceRequest``; :class:`BadRequest` says precisely what is wrong."""
    request = ExportTraceServiceRequest()
    if media == PROTOBUF:
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            raise BadRequest(f"body is not a valid OTLP ExportTraceServiceRequest protobuf: {exc}") from exc
        return request
    if not body.strip():
        return request
    try:
        document = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise BadRequest(f"body is not valid JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise BadRequest("body must be a JSON object with 'resourceSpans'")
    _hex_ids_to_base64(document)
    try:
        json_format.ParseDict(document, request, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise BadRequest(f"body is not a valid OTLP/JSON ExportTraceServiceRequest: {exc}") from exc
    return request


def _hex_ids_to_base64(document: dict[str, Any]) -> None:
    # OTLP/JSON writes ids as hex, where protobuf's JSON mapping expects base64 for bytes.
    for r, resource_spans in enumerate(_list(document.get("resourceSpans"))):
        for s, scope_spans in enumerate(_list(_dict(resource_spans).get("scopeSpans"))):
            for i, span in enumerate(_list(_dict(scope_spans).get("spans"))):
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]"
                _convert(_dict(span), ("traceId", "spanId", "parentSpanId"), where)
                for j, link in enumerate(_list(_dict(span).get("links"))):
                    _convert(_dict(link), ("traceId", "spanId"), f"{where}.links[{j}]")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _convert(obj: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
    for key in keys:
        value = obj.get(key)
        if not value:
            continue
        try:
            obj[key] = base64.b64encode(bytes.fromhex(value)).decode()
        except (TypeError, ValueError) as exc:
            raise BadRequest(f"{where}.{key} must be a hex string; got {value!r}") from exc


def _any_to_str(value: AnyValue) -> str:
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value
    if which == "array_value":
        # Arrays are mostly of non-empty strings (finish reasons): skip the generic walk.
        strings = [v.string_value for v in value.array_value.values]
        if all(strings):
            return orjson.dumps(strings).decode()
    if which in ("array_value", "kvlist_value"):
        # orjson: several times faster, and NaN becomes null where json would write invalid JSON.
        return orjson.dumps(_any_to_python(value)).decode()
    if which is None:
        return ""
    return _scalar_str(value, which)


def _scalar_str(value: AnyValue, which: str) -> str:
    if which == "bool_value":
        return "true" if value.bool_value else "false"
    if which == "int_value":
        return str(value.int_value)
    if which == "double_value":
        return repr(value.double_value)
    return base64.b64encode(value.bytes_value).decode()


def _any_to_python(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_any_to_python(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _any_to_python(kv.value) for kv in value.kvlist_value.values}
    if which in ("string_value", "bool_value", "int_value", "double_value"):
        return getattr(value, which)
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return None


def _attributes(key_values: Any) -> dict[str, str]:
    # Inlined for the common scalar types: this runs for every attribute of every span.
    out: dict[str, str] = {}
    for kv in key_values:
        value = kv.value
        text = value.string_value  # most values are strings: one call instead of WhichOneof first
        if text:
            out[kv.key] = text
        elif value.WhichOneof("value") == "int_value":
            out[kv.key] = str(value.int_value)
        else:
            out[kv.key] = _any_to_str(value)
    return out


# DateTime64(9) ends at 2262-04-11 (int64 nanoseconds); a larger uint64 would fail the whole
# insert and, once acknowledged, block the spool behind it.


# Spans that cannot be stored faithfully are rejected one by one (OTLP partial_success), never
# the whole request: ids of the wrong size, no start time, ends before it starts, or times
# outside what DateTime64(9) holds.
_MAX_UNIX_NANO = 9_223_372_036 * 10**9  # 2262-04-11, DateTime64(9)'s last second


def _outside(start: int, bounds: tuple[int, int], window: IngestWindow) -> str | None:
    if start < bounds[0]:
        days = (bounds[0] - start) / DAY_NS + window.days_back
        return f"starts {days:.1f} days ago; spans of the last {window.days_back} days are stored (--ingest-days-back)"
    if start > bounds[1]:
        days = (start - bounds[1]) / DAY_NS + window.days_ahead
        return (
            f"starts {days:.1f} days ahead of the collector's clock; spans up to {window.days_ahead} "
            "days ahead are stored (--ingest-days-ahead)"
        )
    return None


def day_range(rows: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """First and last day (since 1970-01-01, UTC) of ``rows``' ``Timestamp``, as :func:`to_rows` writes it."""
    days = [row_time_day(row["Timestamp"]) for row in rows]
    return min(days), max(days)


def span_keys(rows: Sequence[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """``(Timestamp, TraceId, SpanId)`` of each row, in order: what the spool keeps to find repeats."""
    return [(row["Timestamp"], row["TraceId"], row["SpanId"]) for row in rows]


def _invalid(span: Any) -> str | None:
    if len(span.trace_id) != 16 or not any(span.trace_id):
        return "trace_id must be 16 non-zero bytes"
    if len(span.span_id) != 8 or not any(span.span_id):
        return "span_id must be 8 non-zero bytes"
    if span.parent_span_id and len(span.parent_span_id) != 8:
        return "parent_span_id must be empty or 8 bytes"
    start, end = span.start_time_unix_nano, span.end_time_unix_nano
    if start == 0 or start >= _MAX_UNIX_NANO or end >= _MAX_UNIX_NANO:
        return "start/end time must be set and before 2262"
    if end < start:
        return "end time is before start time"
    return None


# Most spans have neither events nor links: one shared empty value instead of seven list builds.
_NO_EVENTS: dict[str, list[Any]] = {"Events.Timestamp": [], "Events.Name": [], "Events.Attributes": []}
_NO_LINKS: dict[str, list[Any]] = {
    "Links.TraceId": [], "Links.SpanId": [], "Links.TraceState": [], "Links.Attributes": [],
}


def _events(events: Any) -> dict[str, list[Any]]:
    return {
        "Events.Timestamp": [row_time_text(e.time_unix_nano) for e in events],
        "Events.Name": [e.name for e in events],
        "Events.Attributes": [_attributes(e.attributes) for e in events],
    }


def _links(links: Any) -> dict[str, list[Any]]:
    return {
        "Links.TraceId": [link.trace_id.hex() for link in links],
        "Links.SpanId": [link.span_id.hex() for link in links],
        "Links.TraceState": [link.trace_state for link in links],
        "Links.Attributes": [_attributes(link.attributes) for link in links],
    }


def to_rows(
    request: ExportTraceServiceRequest,
    project: str,
    rejected: list[str] | None = None,
    *,
    window: IngestWindow | None = None,
    now_s: float | None = None,
    earlier_requests: bool = True,
) -> list[dict[str, Any]]:
    """Flatten a request into ``otel_traces`` rows, stamping every resource with ``project``.

    The project always comes from the caller (the API key), never from the span: a resource
    attribute claiming another project is overwritten. Spans of other instrumentations get the
    canonical attribute names (:func:`~._normalize.normalize`), the outer span of a call two
    instrumentations describe is marked (:func:`~._nesting.mark_same_calls`: with the process's
    memory of earlier requests, or with ``earlier_requests`` false within this request only, for a
    :class:`~._nesting.Pairing` in another process to take over), and spans with
    tokens and a known model but no cost get one (:func:`~._enrich.add_cost`). Spans that cannot be
    stored, or that start outside ``window`` (measured from ``now_s``, default: now), are left
    out, and why is appended to ``rejected`` when given. A span the request holds twice (same
    trace and span id) becomes one row, from its first copy: it is one span, sent twice.
    """
    window = window or IngestWindow()
    bounds = window.bounds_ns(now_s)
    rows: list[dict[str, Any]] = []
    seen: set[bytes] = set()
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        resource[semconv.PROJECT] = project
        service = resource.get("service.name", "")
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope
            for span in scope_spans.spans:
                problem = _invalid(span) or _outside(span.start_time_unix_nano, bounds, window)
                if problem is not None:
                    if rejected is not None:
                        rejected.append(f"span {span.span_id.hex() or '(empty)'} ({span.name!r}): {problem}")
                    continue
                key = span.trace_id + span.span_id
                if key in seen:
                    continue
                seen.add(key)
                start, end = span.start_time_unix_nano, span.end_time_unix_nano
                rows.append(
                    {
                        "Timestamp": row_time_text(start),
                        "TraceId": span.trace_id.hex(),
                        "SpanId": span.span_id.hex(),
                        "ParentSpanId": span.parent_span_id.hex(),
                        "TraceState": span.trace_state,
                        "SpanName": span.name,
                        "SpanKind": _KIND.get(span.kind, "Unspecified"),
                        "ServiceName": service,
                        "ResourceAttributes": resource,
                        "ScopeName": scope.name,
                        "ScopeVersion": scope.version,
                        "SpanAttributes": _attributes(span.attributes),
                        "Duration": max(end - start, 0),
                        "StatusCode": _STATUS.get(span.status.code, "Unset"),
                        "StatusMessage": span.status.message,
                        **(_events(span.events) if span.events else _NO_EVENTS),
                        **(_links(span.links) if span.links else _NO_LINKS),
                    }
                )
    _complete(rows, earlier_requests)
    return rows


def _complete(rows: list[dict[str, Any]], earlier_requests: bool) -> None:
    # Canonical names first: finding nested pairs and pricing read only those.
    for row in rows:
        normalize(row)
    mark_same_calls(rows, earlier_requests=earlier_requests)
    for row in rows:
        add_cost(row["SpanAttributes"])
