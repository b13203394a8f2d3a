"""Who a call is for: tenant, user and route, carried in a context variable.

``contextvars`` follow ``asyncio`` tasks and ``contextvars.copy_context()``, so concurrent
requests for different tenants never see each other's attribution.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass

from . import _attrs


@dataclass(frozen=True, slots=True)
class Attribution:
    """The tenant, user and route that the spans of the current context are charged to."""

    tenant_id: str | None = None
    user_id: str | None = None
    route: str | None = None

    def attributes(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.tenant_id is not None:
            out[_attrs.TENANT] = self.tenant_id
        if self.user_id is not None:
            out[_attrs.USER] = self.user_id
        if self.route is not None:
            out[_attrs.ROUTE] = self.route
        return out


_EMPTY = Attribution()
_current: contextvars.ContextVar[Attribution] = contextvars.ContextVar(
    "infersight_attribution", default=_EMPTY
)


def current() -> Attribution:
    return _current.get()


@contextlib.contextmanager
def tenant(
    tenant_id: str, *, user_id: str | None = None, route: str | None = None
) -> Iterator[Attribution]:
    """Charge every span started inside the block to ``tenant_id`` (and optionally a user and route).

    Nested blocks inherit what they do not override. Works across ``await`` and in tasks
    created inside the block; it does not leak into concurrent tasks started elsewhere.
    """
    outer = _current.get()
    inner = Attribution(
        tenant_id=tenant_id,
        user_id=user_id if user_id is not None else outer.user_id,
        route=route if route is not None else outer.route,
    )
    token = _current.set(inner)
    try:
        yield inner
    finally:
        _current.reset(token)
