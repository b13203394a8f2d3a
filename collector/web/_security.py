"""What every response gets, whatever route made it: security headers, and 503 for a store outage
(500 for a read the store refused), and the app's error handlers in one mapping."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from fastapi.exceptions import RequestValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import BadRequest, StoreError
from ._error_pages import ErrorPages, Handler
from ._refusals import bad_request, invalid_parameter

RETRY_AFTER_S = 5
logger = logging.getLogger("infersight.collector")


class SecurityHeaders:
    """ASGI middleware adding ``headers`` to every HTTP response that does not set them itself.

    Pure ASGI (it only edits the response's start message), so it costs the OTLP receivers
    nothing measurable, unlike a ``BaseHTTPMiddleware`` that runs each request in a task.
    """

    def __init__(self, app: ASGIApp, headers: Mapping[str, str]) -> None:
        self.app = app
        self._headers = [(k.lower().encode(), v.encode()) for k, v in headers.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(k, v) for k, v in self._headers if k not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def store_unavailable(pages: ErrorPages) -> Handler:
    """A read that the store could not answer.

    An outage (``exc.transient``: the store is down, overloaded, or a table is missing until
    the schema is back) is a 503 with ``Retry-After``, as JSON under ``/api/`` and as the
    "store unavailable" page of ``pages`` elsewhere. Anything else is the query's own fault,
    which no retry cures: a 500 without ``Retry-After``, so a client does not retry forever.
    (Parameters are checked before they reach the store, :mod:`._refusals`.)
    """

    async def handle(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StoreError)
        if not exc.transient:
            logger.error("the store refused a read of %s: %s", request.url.path, exc)
            message = "the store refused this read; it is a bug in the collector, please report it"
            if request.url.path.startswith("/api/"):
                return JSONResponse({"detail": f"{message}: {exc}"}, 500)
            return pages.error(f"{message}: {exc}", 500)
        if request.url.path.startswith("/api/"):
            retry = {"retry-after": str(RETRY_AFTER_S)}
            return JSONResponse({"detail": f"store unavailable: {exc}"}, 503, headers=retry)
        return pages.store_unavailable(str(exc))

    return handle


def error_handlers(pages: ErrorPages) -> dict[type[Exception], Handler]:
    """The app's exception handlers: a refused parameter is a 400 (:mod:`._refusals`), a store
    outage a 503 and a read the store refused a 500, each as JSON under ``/api/`` and as one of
    ``pages`` elsewhere."""
    return {
        StoreError: store_unavailable(pages),
        BadRequest: bad_request(pages),
        RequestValidationError: invalid_parameter(pages),
    }
