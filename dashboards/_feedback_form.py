"""The trace page's thumbs form: a reviewer's verdict on a trace, stored as feedback with source
``dashboard``, then back to the trace. Refused unless posted from the collector's own pages
(``SameOriginDep``): another site must not put words into a project's feedback. Like every
write from the pages it needs an admin key's session: a read key changes nothing."""

from __future__ import annotations

import time
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response

from infersight.collector.errors import PayloadTooLarge
from infersight.collector.store import feedback_rows, insert_feedback
from infersight.collector.web import AdminPageProjectDep, SameOriginDep, StoreDep

from ._traces import check_trace_id

router = APIRouter()

_FORM_MAX_BYTES = 16_384  # a comment of 4096 characters, percent-encoded


@router.post("/traces/{trace_id}/feedback")
async def trace_feedback_form(
    request: Request, trace_id: str, store: StoreDep, project: AdminPageProjectDep, _: SameOriginDep
) -> Response:
    """Store the form's ``thumbs`` (``up``/``down``) and ``comment`` on the trace (400 naming
    what is wrong otherwise); a 303 back to the trace's feedback."""
    trace_id = check_trace_id(trace_id)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > _FORM_MAX_BYTES:
            raise PayloadTooLarge(f"The feedback form takes at most {_FORM_MAX_BYTES} bytes.")
    form = parse_qs(body.decode("utf-8", "replace"), max_num_fields=10)
    item = {"trace_id": trace_id, "thumbs": form.get("thumbs", [None])[0], "name": "reviewer",
            "comment": form.get("comment", [""])[0], "user_id": "dashboard"}
    rows = feedback_rows(item, project, now_ns=time.time_ns(), source="dashboard")
    await run_in_threadpool(insert_feedback, store, rows)
    return RedirectResponse(f"/traces/{trace_id}#feedback", 303)
