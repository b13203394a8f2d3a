"""Classify an exception from a provider call as ``transient`` (worth a retry) or ``logic`` (not).

Transient: timeouts, connection failures, 408/409/425/429, 5xx and provider overload (Anthropic's
529). Logic: every other 4xx, validation and parsing errors. Works on the exceptions of the
openai, anthropic, httpx and requests libraries without importing any of them: it reads a status
code from the exception (``status_code``, ``status``, ``response.status_code``) and otherwise
looks at the class hierarchy's names.
"""

from __future__ import annotations

import asyncio

TRANSIENT = "transient"
LOGIC = "logic"

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
_TRANSIENT_NAMES = ("timeout", "connection", "ratelimit", "overload", "unavailable", "internalserver", "apiconnection")


def _attr(obj: object, name: str) -> object:
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - an exception object with a hostile __getattr__ has no status
        return None


def _status_code(exc: BaseException) -> int | None:
    for value in (
        _attr(exc, "status_code"),
        _attr(exc, "status"),
        _attr(_attr(exc, "response"), "status_code"),
    ):
        if type(value) is int and 100 <= value <= 599:
            return value
    return None


def classify(exc: BaseException) -> str:
    """``"transient"`` or ``"logic"`` for an exception raised by a provider call."""
    status = _status_code(exc)
    if status is not None:
        return TRANSIENT if status >= 500 or status in _TRANSIENT_STATUS else LOGIC
    if issubclass(type(exc), (TimeoutError, ConnectionError, asyncio.TimeoutError)):
        return TRANSIENT
    for cls in type(exc).__mro__:
        name = cls.__name__.lower()
        if any(marker in name for marker in _TRANSIENT_NAMES):
            return TRANSIENT
    return LOGIC
