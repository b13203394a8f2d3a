"""``POST /v1/traces``: the OTLP/HTTP trace receiver."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from . import _otlp
from ._deps import SettingsDep, StoreDep
from ._errors import BadRequest, StoreError

router = APIRouter()

# google.rpc.Code values that the OTLP spec maps HTTP statuses onto.
_RPC_CODE = {400: 3, 413: 8, 415: 3}


@router.post("/v1/traces")
async def receive_traces(request: Request, store: StoreDep, settings: SettingsDep) -> Response:
    content_type = request.headers.get("content-type")
    try:
        media = _otlp.media_type(content_type)
    except BadRequest as exc:
        return _error(exc, _otlp.JSON)
    try:
        body = _otlp.decompress(
            await request.body(), request.headers.get("content-encoding"), settings.max_body_bytes
        )
        traces = _otlp.parse_traces(body, media)
    except BadRequest as exc:
        return _error(exc, media)
    rows = _otlp.to_rows(traces, settings.project)
    try:
        await run_in_threadpool(store.insert, "otel_traces", rows)
    except StoreError as exc:
        # Not acknowledged, so the exporter keeps the spans and retries after the delay.
        response = _encode(status_pb2.Status(code=14, message=f"store unavailable: {exc}"), media, 503)
        response.headers["Retry-After"] = "5"
        return response
    return _encode(ExportTraceServiceResponse(), media, 200)


def _error(exc: BadRequest, media: str) -> Response:
    status = status_pb2.Status(code=_RPC_CODE.get(exc.status_code, 3), message=str(exc))
    return _encode(status, media, exc.status_code)


def _encode(message, media: str, status_code: int) -> Response:  # message: protobuf Message
    if media == _otlp.PROTOBUF:
        return Response(message.SerializeToString(), status_code, media_type=_otlp.PROTOBUF)
    return Response(json_format.MessageToJson(message, indent=None), status_code, media_type=_otlp.JSON)
