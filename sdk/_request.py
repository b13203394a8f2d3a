"""``request()``: one application request, one trace.

Without a span around them, a request's retrieval, rerank and LLM calls each start a trace of
their own, and the collector's trace view shows three unrelated rows. ``request`` opens the root
span (or a child of the web framework's server span, when one is current) and the tenant block
in one line, so everything the request does below it shares one trace id.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

from opentelemetry import trace

from . import _setup
from ._attribution import attributed, current
from ._guard import plain_text


@contextlib.contextmanager
def request(
    tenant_id: str | None = None,
    *,
    route: str | None = None,
    user_id: str | None = None,
    tags: Mapping[str, str] | None = None,
    name: str | None = None,
    session_id: str | None = None,
) -> Iterator[trace.Span]:
    """Trace one request: a span named ``name`` (default ``request {route}``) that the traced calls
    inside share as their trace's root, charged to ``tenant_id``/``user_id``/``route`` like :func:`tenant`.

        with sdk.request("acme", route="support.answer", user_id="u-1", session_id=chat.id):
            answer(rerank(q, retrieve(q)))

    ``session_id`` names the conversation the request is a turn of: every span inside carries it
    (``gen_ai.conversation.id``), and the collector's Sessions page shows the turns in order.
    Without ``tenant_id`` the enclosing block's tenant (if any) is kept.

    Also a decorator for sync functions. Exceptions are recorded on the span and re-raised.
    Before ``init`` it only sets the attribution. Cheap: one span and one context switch.
    """
    with contextlib.ExitStack() as stack:
        if any(value is not None for value in (tenant_id, user_id, route, tags, session_id)):
            stack.enter_context(attributed(tenant_id, user_id=user_id, route=route, tags=tags, session_id=session_id))
        tracer = _setup.tracer()
        if tracer is None:
            yield trace.INVALID_SPAN
            return
        attribution = current()
        span_name = plain_text(name, "request name") or (
            f"request {attribution.route}" if attribution.route else "request")
        with tracer.start_as_current_span(span_name, attributes=attribution.attributes()) as span:
            yield span
