"""``POST /api/v1/feedback``: users' thumbs and scores on traces and spans, from the app (the
SDK's :func:`infersight.sdk.feedback` or any HTTP client), scoped to the project of the
caller's key.

A web route rather than a stage's: feedback is written by apps as the read API is read, and the
pages, the weekly report and the judges' sampler read it back through the store.
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool

from ..errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from ..store import feedback_rows, insert_feedback
from ._deps import IngestProjectDep, StoreDep
from ._origin import NotCrossSiteDep

router = APIRouter(prefix="/api/v1")

# 1000 items (the most one request takes) of a few hundred bytes, with room for long comments.
MAX_BODY_BYTES = 1 << 20
_SOURCE_HEADER = "x-infersight-source"


@router.post("/feedback")
async def post_feedback(
    request: Request, store: StoreDep, project: IngestProjectDep, _: NotCrossSiteDep
) -> dict[str, Any]:
    """Store feedback: a JSON object or a list of them, each with ``trace_id``, optionally
    ``span_id``, exactly one of ``score`` (a number) or ``thumbs`` (``"up"``/``"down"``), and
    optionally ``name`` (default ``user_feedback``), ``comment``, ``user_id`` and ``id``.

    Answers ``{"stored": n, "ids": [...]}`` once every item is in the store, a 400 naming the
    first unusable item and field (nothing is stored then), 413 past 1 MiB, 415 for a body that
    is not JSON. Feedback naming a trace of another project is stored under the caller's
    project, where that project's owner never sees it. Apps send it: an ingest key (or admin).
    """
    content_type = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if content_type != "application/json":
        raise UnsupportedMediaType(f"Feedback is a JSON body (Content-Type application/json); got {content_type!r}.")
    body = await _body(request)
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"The body is not valid JSON: {exc}.") from None
    source = "sdk" if request.headers.get(_SOURCE_HEADER) == "sdk" else "api"
    rows = feedback_rows(payload, project, now_ns=time.time_ns(), source=source)
    await run_in_threadpool(insert_feedback, store, rows)
    return {"stored": len(rows), "ids": [row["id"] for row in rows]}


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise PayloadTooLarge(f"Feedback bodies are at most {MAX_BODY_BYTES} bytes; this one declares {declared}.")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise PayloadTooLarge(f"Feedback bodies are at most {MAX_BODY_BYTES} bytes.")
    return bytes(body)
