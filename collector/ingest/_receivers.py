"""``POST /v1/traces``: the OTLP/HTTP trace receiver (and ``/v1/metrics``, ``/v1/logs``).

Authenticate, decode into ``otel_traces`` rows and run the inline detectors (in the decode
workers), append to the spool, and answer 200 only once the spool has committed; the spool
writer stores the rows afterwards.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from functools import partial
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from starlette.background import BackgroundTask

from .._counters import Counters
from .._settings import Settings
from ..errors import BadRequest, PayloadTooLarge, RequestTimeout, SpoolError, StoreError, WorkerLost
from ..spool import Spool, SpoolWriter
from ..store import Store, complete_calls, encode_rows
from ..web import key_project
from . import _otlp, _otlp_logs, _otlp_metrics
from ._decode import Decoder

# google.rpc.Code values that the OTLP spec maps HTTP statuses onto.
_RPC_CODE = {400: 3, 401: 16, 403: 7, 408: 4, 413: 8, 415: 3}
_UNAVAILABLE = 14
RETRY_AFTER_S = 5


# Plain Starlette routes, not FastAPI's: resolving six dependencies per request was ~60% of
# the server process's GIL time at 20k spans/s (py-spy --gil), and an OTLP body is protobuf
# or OTLP/JSON that FastAPI could neither validate nor document anyway.
async def receive_traces(request: Request) -> Response:
    decoder: Decoder = request.app.state.decoder
    spool: Spool = request.app.state.spool
    counters: Counters = request.app.state.counters
    content_type = request.headers.get("content-type")
    bad_media: BadRequest | None
    try:
        media = _otlp.media_type(content_type)
    except BadRequest as exc:
        media, bad_media = _otlp.JSON, exc
    else:
        bad_media = None
    spans = 0
    try:
        project = key_project(request)  # before the body is read: an unauthenticated caller costs no decoding
        if bad_media is not None:
            raise bad_media
        body = await read_body(request, decoder.limit_bytes, request.app.state.settings.body_timeout_s)
        decoded = await decoder.decode(project, body, request.headers.get("content-encoding"), media)
        spans, rejected = decoded.spans, decoded.rejected
        if decoded.entry is not None:
            await run_in_threadpool(spool.append, decoded.entry)
    except BadRequest as exc:
        counters.add(f"rejected:{exc.status_code}")
        return _error(exc, media)
    except SpoolError as exc:  # full, or a disk error: either way not acknowledged
        counters.add("spans_refused", spans)
        return _unavailable(str(exc), media)
    except WorkerLost as exc:
        return _unavailable(str(exc), media)
    if spans:
        counters.add("spans_received", spans)
        writer: SpoolWriter = request.app.state.writer
        writer.wake()
    response = ExportTraceServiceResponse()
    if rejected:
        counters.add("spans_rejected", len(rejected))
    _partial_success(response, "rejected_spans", rejected)
    return _encode(response, media, 200)


async def receive_metrics(request: Request) -> Response:
    """OTLP metrics: the SDK's queue gauges are stored in ``queue_depth``; others are accepted.

    Not spooled: gauges are resent every interval, so a store outage is a 503 and the next
    interval brings the points again.
    """
    return await _receive_into_store(
        request, _metric_rows, "queue_depth", "data points", ExportMetricsServiceResponse(),
        "rejected_data_points", rows_token=False,
    )


async def receive_logs(request: Request) -> Response:
    """OTLP logs: the GenAI events among them are stored in ``genai_events``; others are accepted.

    Acknowledged only once stored: the insert is verified, and a retried request (same project,
    same events) carries the same deduplication token, so it is stored once. A store that is
    down is a 503 with ``Retry-After`` (the exporter keeps the records and retries); rows the
    store refuses are a 400, since a retry would be refused the same way.
    """
    return await _receive_into_store(
        request, _event_rows, "genai_events", "events", ExportLogsServiceResponse(),
        "rejected_log_records", rows_token=True, counter="genai_events_received", then=_complete_calls,
    )


def _complete_calls(request: Request, rows: list[dict[str, Any]]) -> BackgroundTask:
    """After the answer: complete the spans already stored that these events belong to."""
    return BackgroundTask(complete_calls, request.app.state.store, {row["trace_id"] for row in rows},
                          request.app.state.decoder.detect)


RowsOf = Callable[[bytes, "str | None", str, Settings, str, list[str]], list[dict[str, Any]]]


async def _receive_into_store(
    request: Request, rows_of: RowsOf, table: str, what: str, response: Message, rejected_field: str,
    *, rows_token: bool, counter: str | None = None,
    then: Callable[[Request, list[dict[str, Any]]], BackgroundTask] | None = None,
) -> Response:
    """Decode off the event loop (a large body decodes for seconds, and /healthz waits meanwhile)
    and insert straight into ``table``; answer 200 once stored, with the records refused one by
    one in ``response``'s partial success (``rejected_field``)."""
    settings: Settings = request.app.state.settings
    counters: Counters = request.app.state.counters
    try:
        media = _otlp.media_type(request.headers.get("content-type"))
    except BadRequest as exc:
        return _error(exc, _otlp.JSON)
    try:
        project = key_project(request)
        body = await read_body(request, settings.max_body_bytes, settings.body_timeout_s)
        rejected: list[str] = []
        rows = await run_in_threadpool(rows_of, body, request.headers.get("content-encoding"), media,
                                       settings, project, rejected)
    except BadRequest as exc:
        counters.add(f"rejected:{exc.status_code}")
        return _error(exc, media)
    if rows:
        store: Store = request.app.state.store
        encoded = encode_rows(rows)
        # Of the rows, not the body: a resent request may be compressed anew (gzip stamps a time).
        token = hashlib.sha256(encoded).hexdigest() if rows_token else None
        try:
            await run_in_threadpool(partial(store.insert, table, encoded, dedup_token=token))
        except StoreError as exc:
            if not exc.transient:  # a retry would be refused the same way: the sender must know
                return _error(BadRequest(f"the store refused these {what}: {exc}"), media)
            return _unavailable(f"store unavailable: {exc}", media)
        if counter is not None:
            counters.add(counter, len(rows))
    _partial_success(response, rejected_field, rejected)
    answer = _encode(response, media, 200)
    if rows and then is not None:
        answer.background = then(request, rows)
    return answer


def _partial_success(response: Message, field: str, rejected: list[str]) -> None:
    """Say in ``response`` how many records were refused (``field``) and why, the first three."""
    if not rejected:
        return
    partial_success = response.partial_success
    setattr(partial_success, field, len(rejected))
    more = f" (and {len(rejected) - 3} more)" if len(rejected) > 3 else ""
    partial_success.error_message = "; ".join(rejected[:3]) + more


async def read_body(request: Request, limit_bytes: int, timeout_s: float) -> bytes:
    """The request body, refused with :class:`PayloadTooLarge` as soon as it passes ``limit_bytes``
    (before reading the rest: a 1 GiB body costs no more memory than the limit), and with
    :class:`RequestTimeout` when it has not all arrived after ``timeout_s``."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit_bytes:
        raise PayloadTooLarge(f"body is {declared} bytes; the limit is {limit_bytes}")
    chunks: list[bytes] = []

    async def read() -> None:
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit_bytes:
                raise PayloadTooLarge(f"body is more than the limit of {limit_bytes} bytes")
            chunks.append(chunk)

    try:
        await asyncio.wait_for(read(), timeout_s)
    except asyncio.TimeoutError:
        raise RequestTimeout(f"the body did not arrive within {timeout_s:g} s") from None
    return b"".join(chunks)


def _metric_rows(
    body: bytes, encoding: str | None, media: str, settings: Settings, project: str, rejected: list[str]
) -> list[dict[str, Any]]:
    inflated = _otlp.decompress(body, encoding, settings.max_body_bytes)
    request = _otlp_metrics.parse_metrics(inflated, media)
    return _otlp_metrics.queue_rows(request, project, rejected, window=settings.ingest_window)


def _event_rows(
    body: bytes, encoding: str | None, media: str, settings: Settings, project: str, rejected: list[str]
) -> list[dict[str, Any]]:
    inflated = _otlp.decompress(body, encoding, settings.max_body_bytes)
    request = _otlp_logs.parse_logs(inflated, media)
    return _otlp_logs.event_rows(request, project, rejected, window=settings.ingest_window)


def _error(exc: BadRequest, media: str) -> Response:
    status = status_pb2.Status(code=_RPC_CODE.get(exc.status_code, 3), message=str(exc))
    response = _encode(status, media, exc.status_code)
    if exc.status_code == 401:
        response.headers["WWW-Authenticate"] = "Bearer"
    return response


def _unavailable(message: str, media: str) -> Response:
    # Not acknowledged: OTLP exporters keep the spans and retry 503 after Retry-After.
    response = _encode(status_pb2.Status(code=_UNAVAILABLE, message=message), media, 503)
    response.headers["Retry-After"] = str(RETRY_AFTER_S)
    return response


def _encode(message: Message, media: str, status_code: int) -> Response:
    if media == _otlp.PROTOBUF:
        return Response(message.SerializeToString(), status_code, media_type=_otlp.PROTOBUF)
    return Response(json_format.MessageToJson(message, indent=None), status_code, media_type=_otlp.JSON)


router = APIRouter()
router.add_route("/v1/traces", receive_traces, methods=["POST"], include_in_schema=False)
router.add_route("/v1/metrics", receive_metrics, methods=["POST"], include_in_schema=False)
router.add_route("/v1/logs", receive_logs, methods=["POST"], include_in_schema=False)
