"""The pages an error gets outside ``/api/``, supplied by whoever serves pages.

The web layer sits below the routes built on it (the dashboards among them), so it does not
import their templates: the app factory hands the handlers the dashboards' renderers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

Handler = Callable[[Request, Exception], Awaitable[Response]]
"""An exception handler as Starlette calls it."""


@dataclass(frozen=True)
class ErrorPages:
    """How a refusal or an outage reads as a page.

    ``error(message, status_code)`` renders any error; ``store_unavailable(message)`` the 503
    of a store outage (with its own ``Retry-After``). Both are called on the event loop, so
    they must not block.
    """

    error: Callable[[str, int], Response]
    store_unavailable: Callable[[str], Response]

