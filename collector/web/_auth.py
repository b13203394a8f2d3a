"""Who is asking: the project and role behind an API key (``Authorization: Bearer``) or a
dashboard cookie, and whether that role may do what is asked (:mod:`._roles`).

Key lookups are cached for :data:`CACHE_S` seconds, so a revocation made with
``infersight keys revoke`` reaches a running collector within that time without a round trip to
the key book per request. Only read and admin keys open a dashboard session: an ingest key,
the one every app's configuration holds, is refused at the login.

Dashboard cookies are signed (HMAC-SHA256) and name the key's display prefix (never the key)
and a random session id: each request re-checks that key, so revoking it also ends its
sessions, and that the session has not been ended by ``/logout``.

Logging out records the session id in the key book (``ended_sessions``: the key file, or the
store's table) until the cookie would have expired anyway, so a copy of the cookie taken before
the logout is refused after it: at once by this collector, within seconds by another process
reading the same key book. The record lives where the keys and the signing secret live, because a session is good
exactly where those are; at most one row per logout of the last :data:`SESSION_MAX_AGE_S`.
A session id is the session's own, not the key's: logging out ends this browser's session,
not those of colleagues logged in with the same project key.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable

from ..errors import Forbidden, Unauthorized
from ._keys import PREFIX_CHARS, KeyBook, hash_key, looks_like_key
from ._roles import Grant, Role, refusal

CACHE_S = 2.0
SESSION_COOKIE = "infersight_session"
SESSION_MAX_AGE_S = 12 * 3600
_CACHE_MAX = 10_000
_FOREVER = float("inf")


class Authenticator:
    """Maps keys and session cookies to grants (project and role). Thread-safe; a cache miss
    asks the key book."""

    def __init__(self, keys: KeyBook, *, cache_s: float = CACHE_S) -> None:
        self.keys = keys
        self.cache_s = cache_s
        self._cache: dict[str, tuple[float, Grant | None]] = {}
        self._lock = threading.Lock()

    def project_for_authorization(self, header: str | None, needed: Role) -> str:
        """The project of ``Authorization: Bearer <key>`` if its role allows ``needed``;
        :class:`Unauthorized` without a valid key, :class:`Forbidden` for a key of another role."""
        scheme, _, key = (header or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise Unauthorized("send 'Authorization: Bearer <key>'; create a key with 'infersight keys create'")
        return _allowed(self.grant_for_key(key.strip()), needed)

    def grant_for_key(self, key: str) -> Grant:
        """The project and role of an active ``key``; :class:`Unauthorized` if unknown or revoked."""
        grant = None
        if looks_like_key(key):
            key_hash = hash_key(key)
            grant = self._cached("h:" + key_hash, lambda: self.keys.grant_for_hash(key_hash))
        if grant is None:
            raise Unauthorized("the API key is unknown or revoked")
        return grant

    def session_cookie(self, key: str, *, now_s: float | None = None) -> str:
        """A signed cookie value for a dashboard login with ``key``; :class:`Unauthorized` if
        the key is bad, :class:`Forbidden` if it may not read (an ingest key)."""
        _allowed(self.grant_for_key(key), "read")
        issued = int(time.time() if now_s is None else now_s)
        payload = f"{key[:PREFIX_CHARS]}.{issued}.{secrets.token_hex(16)}"
        return f"{payload}.{self._sign(payload, self.keys.session_secrets()[0])}"

    def grant_for_session(self, cookie: str | None, *, now_s: float | None = None) -> Grant | None:
        """The grant of a session cookie; ``None`` if absent, forged, expired, ended or revoked."""
        session = self._session(cookie, now_s)
        if session is None:
            return None
        prefix, session_id, _ = session
        return self._cached("s:" + session_id, lambda: self.keys.grant_for_session(prefix, session_id))

    def project_for_session(self, cookie: str | None, *, now_s: float | None = None) -> str | None:
        """The project of a session cookie, whatever its role; ``None`` as :meth:`grant_for_session`."""
        grant = self.grant_for_session(cookie, now_s=now_s)
        return None if grant is None else grant.project

    def end_session(self, cookie: str | None, *, now_s: float | None = None) -> None:
        """End the session of ``cookie`` here and for every reader of the key book; a cookie that
        is not a live session (forged, expired) is ignored, so nobody can fill the table."""
        session = self._session(cookie, now_s)
        if session is None:
            return
        _, session_id, issued = session
        self.keys.end_session(session_id, issued + SESSION_MAX_AGE_S, now_s=now_s)
        with self._lock:
            self._cache["s:" + session_id] = (_FOREVER, None)

    def _session(self, cookie: str | None, now_s: float | None) -> tuple[str, str, int] | None:
        """(key prefix, session id, issued at) of a cookie signed here and not expired."""
        payload, _, signature = (cookie or "").rpartition(".")
        # Any of the book's secrets: collectors that started at once may each have added one.
        if not payload or not any(
            hmac.compare_digest(signature, self._sign(payload, secret)) for secret in self.keys.session_secrets()
        ):
            return None
        parts = payload.split(".")
        if len(parts) != 3:
            return None
        prefix, issued, session_id = parts
        now = time.time() if now_s is None else now_s
        if not issued.isdigit() or not session_id or not 0 <= now - int(issued) <= SESSION_MAX_AGE_S:
            return None
        return prefix, session_id, int(issued)

    @staticmethod
    def _sign(payload: str, secret: bytes) -> str:
        return hmac.new(secret, payload.encode(), hashlib.sha256).hexdigest()

    def _cached(self, cache_key: str, lookup: Callable[[], Grant | None]) -> Grant | None:
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(cache_key)
        if hit is not None and hit[0] > now:
            return hit[1]
        grant = lookup()
        with self._lock:
            if len(self._cache) >= _CACHE_MAX:
                self._cache.clear()  # random bad keys must not grow it without bound
            if self._cache.get(cache_key, (0.0, None))[0] != _FOREVER:  # a logout while we looked
                self._cache[cache_key] = (now + self.cache_s, grant)
        return grant


def _allowed(grant: Grant, needed: Role) -> str:
    """``grant``'s project if its role allows ``needed``; :class:`Forbidden` naming the role needed."""
    if not grant.allows(needed):
        raise Forbidden(refusal(grant.role, needed))
    return grant.project
