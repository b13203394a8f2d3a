"""Who is asking: the project behind an API key (``Authorization: Bearer``) or a dashboard cookie.

Key lookups are cached for :data:`CACHE_S` seconds, so a revocation made with
``infersight keys revoke`` reaches a running collector within that time without a round trip to
SQLite per request. Dashboard cookies are signed (HMAC-SHA256) and name the key's display
prefix, never the key: each request re-checks that key, so revoking it also ends its sessions.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections.abc import Callable

from ..errors import Unauthorized
from ._keys import PREFIX_CHARS, ProjectKeys, hash_key, looks_like_key

CACHE_S = 2.0
SESSION_COOKIE = "infersight_session"
SESSION_MAX_AGE_S = 12 * 3600
_CACHE_MAX = 10_000


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
        payload = f"{key[:PREFIX_CHARS]}.{int(time.time() if now_s is None else now_s)}"
        return f"{payload}.{self._sign(payload)}"

    def project_for_session(self, cookie: str | None, *, now_s: float | None = None) -> str | None:
        """The project of a session cookie; ``None`` if absent, forged, expired or revoked."""
        payload, _, signature = (cookie or "").rpartition(".")
        if not payload or not hmac.compare_digest(signature, self._sign(payload)):
            return None
        prefix, _, issued = payload.partition(".")
        now = time.time() if now_s is None else now_s
        if not issued.isdigit() or not 0 <= now - int(issued) <= SESSION_MAX_AGE_S:
            return None
        return self._cached("p:" + prefix, lambda: self.keys.project_for_prefix(prefix))

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
            self._cache[cache_key] = (now + self.cache_s, project)
        return project
