"""Checks of the values readers take from users (query parameters of the read API, the pages,
the CLI): each refuses an unusable value with :class:`BadRequest`, in one message shape that
names the parameter and says what is wrong, before the value reaches a query.

Pure functions with no web imports, so the weekly report and the CLI can use them too.
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Iterable

from ..errors import BadRequest
from ._time import shown, since_to_unix_ns

TEXT_MAX_CHARS = 256


def since_ns(since: str, *, now_ns: int | None = None, name: str = "since") -> int:
    """The start of a look-back window ending now, in Unix nanoseconds.

    ``since`` is a look-back (``15m``, ``24h``, ``7d``) or an ISO 8601 time; it must lie between
    1970-01-01 (nothing older is stored) and now (a window that starts later holds nothing).
    Raises :class:`BadRequest` naming ``name`` otherwise.
    """
    now = time.time_ns() if now_ns is None else now_ns
    start = since_to_unix_ns(since, now_s=now / 1e9, name=name)
    if start >= now:
        raise BadRequest(f"The '{name}' parameter must be a time in the past; got {shown(since)}.")
    return start


def check_text(name: str, value: str | None, *, max_chars: int = TEXT_MAX_CHARS) -> str | None:
    """A free-text value as given, or ``None`` when empty; :class:`BadRequest` when unusable.

    Any printable text is fine (quotes, SQL, any script): values are bound, never formatted into
    SQL. Control characters and overly long values are refused.
    """
    if value is None or value == "":
        return None
    if len(value) > max_chars:
        raise BadRequest(f"The '{name}' parameter must be at most {max_chars} characters; got {len(value)}.")
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        raise BadRequest(f"The '{name}' parameter must not contain control characters; got {shown(value)}.")
    return value


def check_choice(name: str, value: str | None, choices: Iterable[str], default: str) -> str:
    """``value`` when it is one of ``choices``, ``default`` when absent; :class:`BadRequest` otherwise."""
    allowed = tuple(choices)
    if value is None or value == "":
        return default
    if value not in allowed:
        raise BadRequest(f"The '{name}' parameter must be one of {', '.join(allowed)}; got {shown(value)}.")
    return value
