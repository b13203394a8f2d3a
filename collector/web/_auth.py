"""Who is asking: the project behind an API key (``Authorization: Bearer``) or a dashboard cookie.

Key lookups are cached for :data:`CACHE_S` seconds, so a revocation made with
``infersight keys revoke`` reaches a running collector within that time without a round trip to
SQLite per request. Dashboard cookies are signed (HMAC-SHA256) and name the key's display
prefix (never the key) and a random session id: each request re-checks that key, so revoking
it also ends its sessions, and that the session has not been ended by ``/logout``.

Logging out records the session id in the key file (``ended_sessions``) until the cookie
would have expired anyway, so a copy of the cookie taken before the logout is refused after
it: at once by this collector, within :data:`CACHE_S` by another process reading the same key
file. The record lives where the keys and the signing secret live, because a session is good
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

from ..errors import Unauthorized
from ._keys import PREFIX_CHARS, ProjectKeys, hash_key, looks_like_key

CACHE_S = 2.0
SESSION_COOKIE = "infersight_session"
SESSION_MAX_AGE_S = 12 * 3600
_CACHE_MAX = 10_000
_FOREVER = float("inf")


class Authenticator:
    """Maps keys and session cookies to projects. Thread-safe; a cache miss reads SQLite."""

    def __init__(self, keys: ProjectKeys, *, cache_s: float = CACHE_S) -> None:
        self.keys = keys
        self.cache_s = cache_s
        self._secret = keys.session_secret()
        self._cache: dict[str, tuple[float, str | None]] = {}
        self._lock = threading.Lock()

    def project_for_authorization(self, header: str | None) -> str:
        """The project of ``Authorization: Bearer <key>``; :class:`Unauthorized` otherwise."""
        scheme, _, key = (header or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise Unauthorized("send 'Authorization: Bearer <key>'; create a key with 'infersight keys create'")
        return self.project_for_key(key.strip())

    def project_for_key(self, key: str) -> str:
        """The project of an active ``key``; :class:`Unauthorized` if unknown or revoked."""
        project = None
        if looks_like_key(key):
            key_hash = hash_key(key)
            project = self._cached("h:" + key_hash, lambda: self.keys.project_for_hash(key_hash))
        if project is None:
            raise Unauthorized("the API key is unknown or revoked")
        return project

    def session_cookie(self, key: str, *, now_s: float | None = None) -> str:
        """A signed cookie value for a dashboard login with ``key``; :class:`Unauthorized` if bad."""
        self.project_for_key(key)
        issued = int(time.time() if now_s is None else now_s)
        payload = f"{key[:PREFIX_CHARS]}.{issued}.{secrets.token_hex(16)}"
        return f"{payload}.{self._sign(payload)}"

    def project_for_session(self, cookie: str | None, *, now_s: float | None = None) -> str | None:
        """The project of a session cookie; ``None`` if absent, forged, expired, ended or revoked."""
        session = self._session(cookie, now_s)
        if session is None:
            return None
        prefix, session_id, _ = session
        return self._cached("s:" + session_id, lambda: self.keys.project_for_session(prefix, session_id))

    def end_session(self, cookie: str | None, *, now_s: float | None = None) -> None:
        """End the session of ``cookie`` here and for every reader of the key file; a cookie that
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
        if not payload or not hmac.compare_digest(signature, self._sign(payload)):
            return None
        parts = payload.split(".")
        if len(parts) != 3:
            return None
        prefix, issued, session_id = parts
        now = time.time() if now_s is None else now_s
        if not issued.isdigit() or not session_id or not 0 <= now - int(issued) <= SESSION_MAX_AGE_S:
            return None
        return prefix, session_id, int(issued)

    def _sign(self, payload: str) -> str:
        return hmac.new(self._secret, payload.encode(), hashlib.sha256).hexdigest()

    def _cached(self, cache_key: str, lookup: Callable[[], str | None]) -> str | None:
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(cache_key)
        if hit is not None and hit[0] > now:
            return hit[1]
        project = lookup()
        with self._lock:
            if len(self._cache) >= _CACHE_MAX:
                self._cache.clear()  # random bad keys must not grow it without bound
            if self._cache.get(cache_key, (0.0, None))[0] != _FOREVER:  # a logout while we looked
                self._cache[cache_key] = (now + self.cache_s, project)
        return project
