"""How a refused query parameter reads: one answer, whatever the route.

Every route checks its values with the store's checks (``check_text``, ``check_choice``,
``since_ns``, ``since_to_unix_ns``, ``day_or_yesterday``) or with FastAPI's own ``Query``
bounds, and raises :class:`~infersight.collector.errors.BadRequest`; the handlers here turn
that into the status and a message naming the parameter and what is wrong with it, as JSON
under ``/api/`` and as a page elsewhere. A value is refused before it reaches the store, so
the store's own errors never have to be read as a 400: any error a query still raises is the
store's (see :func:`._security.store_unavailable`).
"""

from __future__ import annotations

from typing import Any

from fastapi.exceptions import RequestValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..errors import BadRequest
from ..store import shown
from ._error_pages import ErrorPages, Handler


def _answer(pages: ErrorPages, request: Request, status_code: int, message: str) -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse({"detail": message}, status_code)
    return pages.error(message, status_code)


def bad_request(pages: ErrorPages) -> Handler:
    """A value a route refused: its status (400, or the subclass's) and the message."""

    async def handle(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, BadRequest)
        return _answer(pages, request, exc.status_code, str(exc))

    return handle


def invalid_parameter(pages: ErrorPages) -> Handler:
    """A value FastAPI could not convert or that broke a ``Query`` bound: 400 in the same shape
    as :func:`bad_request` (FastAPI's own answer is a 422 with a list nobody reads)."""

    async def handle(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return _answer(pages, request, 400, " ".join(_sentence(error) for error in exc.errors()) or "Invalid request.")

    return handle


def _sentence(error: dict[str, Any]) -> str:
    where = [str(part) for part in error.get("loc", ()) if part not in ("query", "path", "body")]
    name = ".".join(where) or "request"
    what = str(error.get("msg", "is not valid")).replace("Input should be", "must be")
    got = error.get("input")
    return f"The '{name}' parameter {what[0].lower() + what[1:] if what else what}; got {shown(got)}."
