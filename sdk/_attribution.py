"""Who a call is for (tenant, user, session, route, tags) and how long it queued, carried in context.

``contextvars`` follow ``asyncio`` tasks and ``contextvars.copy_context()``, so concurrent
requests for different tenants never see each other's attribution. The same values are put in
OpenTelemetry baggage, so standard propagation (``traceparent`` + ``baggage`` headers) carries
them to downstream services, whose SDK reads them back when no ``tenant`` block is active there.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from opentelemetry import baggage
from opentelemetry import context as otel_context

from . import semconv
from ._guard import plain_text, record_failure

_TAG_PREFIX = "infersight.tag."


@dataclass(frozen=True, slots=True)
class Attribution:
    """The tenant, user, session, route and tags that the spans of the current context are charged to."""

    tenant_id: str | None = None
    user_id: str | None = None
    route: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    entered_at_s: float = 0.0
    session_id: str | None = None

    def attributes(self) -> dict[str, str]:
        out = {_TAG_PREFIX + k: v for k, v in self.tags.items()}
        if self.tenant_id is not None:
            out[semconv.TENANT] = self.tenant_id
        if self.user_id is not None:
            out[semconv.USER] = self.user_id
        if self.route is not None:
            out[semconv.ROUTE] = self.route
        if self.session_id is not None:
            out[semconv.CONVERSATION_ID] = self.session_id
        return out


_EMPTY = Attribution()
_current: contextvars.ContextVar[Attribution] = contextvars.ContextVar("infersight_attribution", default=_EMPTY)
_queue_wait: contextvars.ContextVar[float | None] = contextvars.ContextVar("infersight_queue_wait", default=None)
_BAGGAGE_KEYS = {semconv.TENANT: "tenant_id", semconv.USER: "user_id", semconv.ROUTE: "route",
                 semconv.CONVERSATION_ID: "session_id"}


def current() -> Attribution:
    """The active attribution: the innermost ``tenant`` block, else what baggage brought in."""
    attribution = _current.get()
    if attribution is not _EMPTY:
        return attribution
    entries = baggage.get_all()
    if not entries:
        return _EMPTY
    fields = {name: str(entries[key]) for key, name in _BAGGAGE_KEYS.items() if key in entries}
    tags = {k[len(_TAG_PREFIX):]: str(v) for k, v in entries.items() if k.startswith(_TAG_PREFIX)}
    if not (fields or tags):
        return _EMPTY
    return Attribution(
        tenant_id=fields.get("tenant_id"), user_id=fields.get("user_id"), route=fields.get("route"), tags=tags,
        session_id=fields.get("session_id"),
    )


def queue_wait_s() -> float | None:
    """The queue wait recorded by :func:`mark_started` in this context, if any."""
    return _queue_wait.get()


@contextlib.contextmanager
def tenant(
    tenant_id: str,
    *,
    user_id: str | None = None,
    route: str | None = None,
    tags: Mapping[str, str] | None = None,
    session_id: str | None = None,
) -> Iterator[Attribution]:
    """Charge every span started inside the block to ``tenant_id`` (and a user, route, tags and
    the conversation ``session_id``, written as ``gen_ai.conversation.id``).

    Nested blocks inherit what they do not override. Works across ``await`` and in tasks
    created inside the block; it does not leak into concurrent tasks started elsewhere. The
    values also ride on OpenTelemetry baggage to downstream services.
    """
    with attributed(tenant_id, user_id=user_id, route=route, tags=tags, session_id=session_id) as inner:
        yield inner


@contextlib.contextmanager
def attributed(
    tenant_id: str | None,
    *,
    user_id: str | None = None,
    route: str | None = None,
    tags: Mapping[str, str] | None = None,
    session_id: str | None = None,
) -> Iterator[Attribution]:
    """:func:`tenant`, where a ``None`` tenant keeps the enclosing one (``request(session_id=...)``
    without a tenant still marks its spans with the session)."""
    outer = current()
    user_id, route = plain_text(user_id, "tenant user_id"), plain_text(route, "tenant route")
    session_id = plain_text(session_id, "session_id")
    tenant_id = plain_text(tenant_id, "tenant id") if tenant_id is not None else None
    inner = Attribution(
        tenant_id=tenant_id if tenant_id is not None else outer.tenant_id,
        user_id=user_id if user_id is not None else outer.user_id,
        route=route if route is not None else outer.route,
        tags={**outer.tags, **_plain_tags(tags)},
        entered_at_s=time.time(),
        session_id=session_id if session_id is not None else outer.session_id,
    )
    ctx = otel_context.get_current()
    for key, value in inner.attributes().items():
        ctx = baggage.set_baggage(key, value, ctx)
    otel_token = otel_context.attach(ctx)
    token = _current.set(inner)
    queue_token = _queue_wait.set(None)
    try:
        yield inner
    finally:
        _queue_wait.reset(queue_token)
        _current.reset(token)
        otel_context.detach(otel_token)


def _plain_tags(tags: Mapping[str, str] | None) -> dict[str, str]:
    if tags is None:
        return {}
    try:
        pairs = list(dict(tags).items())
    except Exception as exc:  # noqa: BLE001 - a bad mapping loses its tags, never the app's call
        record_failure("tenant tags", exc)
        return {}
    out = {}
    for key, value in pairs:
        k, v = plain_text(key, "tenant tags"), plain_text(value, "tenant tags")
        if k is not None and v is not None:
            out[k] = v
    return out


def mark_started(queued_at: float | None = None) -> float | None:
    """Record that the app's worker has picked the current request up; returns the wait in seconds.

    The wait runs from ``queued_at`` (a ``time.time()`` value taken when the request was queued)
    or, without it, from the start of the enclosing ``tenant`` block. LLM spans started afterwards
    in this context carry it as ``infersight.queue.wait_s``.
    """
    if queued_at is not None and type(queued_at) not in (int, float):
        record_failure("mark_started", TypeError(f"queued_at must be a time.time() value, got {type(queued_at)}"))
        queued_at = None
    start = queued_at if queued_at is not None else _current.get().entered_at_s
    if not start:
        return None
    wait = max(time.time() - start, 0.0)
    _queue_wait.set(wait)
    return wait
