"""Keys kept in the store, shared by every collector of a deployment on one ClickHouse server.

Stateless collectors behind a load balancer must agree on keys, logouts and the cookie secret,
so all three live in the store's tables (``store/sql/085_keys.sql``), append-only so that a
cluster's Distributed tables read them as a single server does. Each collector reads them whole
every :data:`REFRESH_S` seconds on a thread of its own and answers every lookup from that copy:
a request never waits on the store for its key, a store outage keeps the last copy working
(ingest goes on into the spool), and a key revoked through any collector is refused by every
other within :data:`REFRESH_S` (plus the authenticator's own cache).
"""

from __future__ import annotations

import builtins
import logging
import os
import secrets
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..errors import StoreError
from ..store import ClickHouseStore, Store, encode_rows
from ._keys import KeyBook, KeyInfo, ProjectKeys, StoredKey, hash_key, new_key, validate_project
from ._roles import LEGACY_ROLE, Grant, Role, validate_role

logger = logging.getLogger("infersight.collector")

REFRESH_S = 2.0

_KEYS = """
SELECT prefix, any(key_hash) AS key_hash, any(project) AS project, any(role) AS role,
       toUnixTimestamp64Milli(min(created_at)) AS created_ms,
       toUnixTimestamp64Milli(min(revoked_at)) AS revoked_ms
FROM api_keys GROUP BY prefix ORDER BY project, created_ms, prefix
"""
_ENDED = "SELECT DISTINCT session_id FROM ended_sessions WHERE until > fromUnixTimestamp64Milli({now_ms:Int64})"
_SECRETS = "SELECT DISTINCT secret FROM session_secrets ORDER BY secret"


@dataclass(frozen=True, slots=True)
class _Copy:
    """What the store held at one read, with the active keys by hash and by display prefix."""

    keys: list[StoredKey]
    ended: frozenset[str]
    secrets: list[bytes]
    by_hash: dict[str, StoredKey] = field(init=False)
    by_prefix: dict[str, StoredKey] = field(init=False)

    def __post_init__(self) -> None:
        active = [k for k in self.keys if k.info.active]
        object.__setattr__(self, "by_hash", {k.key_hash: k for k in active})
        object.__setattr__(self, "by_prefix", {k.info.prefix: k for k in active})


class StoreKeys:
    """The deployment's keys in ``store`` (a :class:`~._keys.KeyBook`).

    Thread-safe. Lookups never block on the store; ``create``, ``revoke``, ``list`` and
    ``end_session`` do, and raise :class:`~infersight.collector.errors.StoreError` when it
    cannot be reached. Opening reads the tables once (and adds a cookie secret if there is
    none), so a store that is down at start is an error, not an empty key set.
    """

    def __init__(self, store: Store, *, refresh_s: float = REFRESH_S, background: bool = True) -> None:
        self._store = store
        self._refresh_s = refresh_s
        self._lock = threading.Lock()
        self._ended_here: dict[str, float] = {}  # session id -> until: logouts the next read may miss
        self._copy = self._read()
        if not self._copy.secrets:
            self._insert("session_secrets", [{"secret": secrets.token_hex(32), "created_at": _time(time.time())}])
            self._copy = self._read()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(target=self._refresh_loop, name="infersight-keys", daemon=True)
            self._thread.start()

    def create(self, project: str, *, role: Role = LEGACY_ROLE) -> tuple[str, KeyInfo]:
        """A new key for ``project`` with ``role``: the key (show it once) and its listing."""
        validate_project(project)
        validate_role(role)
        taken = {k.info.prefix for k in self._refresh().keys}
        while True:
            key, info = new_key(project, role)
            if info.prefix not in taken:  # two keys sharing a display prefix: 2^-48, but draw again
                break
        self._insert("api_keys", [_row(StoredKey(hash_key(key), info))])
        self._refresh()
        return key, info

    def list(self) -> list[KeyInfo]:
        return [k.info for k in self._refresh().keys]

    def revoke(self, prefix: str) -> KeyInfo:
        """Revoke the one key whose display prefix starts with ``prefix`` (at least 8 characters).

        Raises ``ValueError`` when no key or more than one key matches. Revoking twice is a no-op.
        """
        if len(prefix) < 8:
            raise ValueError(f"Give at least 8 characters of the key prefix; got {prefix!r}.")
        matches = [k for k in self._refresh().keys if k.info.prefix.startswith(prefix)]
        if len(matches) != 1:
            found = "no key" if not matches else f"{len(matches)} keys"
            raise ValueError(f"{found} with a prefix starting {prefix!r}; see 'infersight keys list'.")
        stored = matches[0]
        if not stored.info.active:
            return stored.info
        info = KeyInfo(stored.info.prefix, stored.info.project, stored.info.created_s, time.time(), stored.info.role)
        self._insert("api_keys", [_row(StoredKey(stored.key_hash, info))])
        self._refresh()
        return info

    def grant_for_hash(self, key_hash: str) -> Grant | None:
        # A dict lookup by SHA-256: a caller chooses keys, not hashes, so how far two hashes
        # agree tells them nothing they can steer.
        stored = self._copy.by_hash.get(key_hash)
        return None if stored is None else Grant(stored.info.project, stored.info.role)

    def grant_for_session(self, prefix: str, session_id: str) -> Grant | None:
        copy = self._copy
        stored = copy.by_prefix.get(prefix)
        if stored is None or session_id in copy.ended:
            return None
        return Grant(stored.info.project, stored.info.role)

    def end_session(self, session_id: str, until_s: float, *, now_s: float | None = None) -> None:
        self._insert("ended_sessions", [{"session_id": session_id, "until": _time(until_s)}])
        with self._lock:
            self._ended_here[session_id] = until_s
            copy = self._copy
            self._copy = _Copy(copy.keys, copy.ended | {session_id}, copy.secrets)

    def has_active_keys(self) -> bool:
        return bool(self._copy.by_hash)

    def session_secrets(self) -> builtins.list[bytes]:
        return self._copy.secrets

    def adopt(self, keys: Iterable[StoredKey], cookie_secrets: Iterable[bytes] = ()) -> int:
        """Copy keys (and cookie secrets) from elsewhere, a key file, unless their prefix is
        already here; the number of keys copied. Copying the same file twice copies nothing."""
        copy = self._refresh()
        here = {k.info.prefix for k in copy.keys}
        new = [k for k in keys if k.info.prefix not in here]
        self._insert("api_keys", [_row(k) for k in new])
        known = set(copy.secrets)
        now = _time(time.time())
        new_secrets = [s for s in cookie_secrets if s not in known]
        self._insert("session_secrets", [{"secret": s.hex(), "created_at": now} for s in new_secrets])
        self._refresh()
        return len(new)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def _refresh_loop(self) -> None:
        while not self._stop.wait(self._refresh_s):
            try:
                self._refresh()
            except StoreError as exc:  # keep answering from the last copy; the store comes back
                logger.warning("cannot refresh the API keys from the store (using the last copy): %s", exc)

    def _refresh(self) -> _Copy:
        copy = self._read()
        now = time.time()
        with self._lock:
            # A logout recorded here while the read ran stays ended; once the store's copy has
            # it, or its cookie has expired, it need not be remembered here any more.
            self._ended_here = {s: until for s, until in self._ended_here.items()
                                if until > now and s not in copy.ended}
            copy = _Copy(copy.keys, copy.ended | self._ended_here.keys(), copy.secrets)
            self._copy = copy
        return copy

    def _read(self) -> _Copy:
        keys = [_stored(row) for row in self._store.query(_KEYS)]
        ended = self._store.query(_ENDED, {"now_ms": int(time.time() * 1000)})
        found = [bytes.fromhex(row["secret"]) for row in self._store.query(_SECRETS)]
        return _Copy(keys, frozenset(row["session_id"] for row in ended), found)

    def _insert(self, table: str, rows: builtins.list[dict[str, Any]]) -> None:
        if rows:
            self._store.insert(table, encode_rows(rows))


def _time(unix_s: float) -> str:
    return f"{unix_s:.3f}"


def _row(stored: StoredKey) -> dict[str, Any]:
    info = stored.info
    return {
        "prefix": info.prefix, "key_hash": stored.key_hash, "project": info.project, "role": info.role,
        "created_at": _time(info.created_s),
        "revoked_at": None if info.revoked_s is None else _time(info.revoked_s),
    }


def _stored(row: dict[str, Any]) -> StoredKey:
    revoked = row["revoked_ms"]
    info = KeyInfo(row["prefix"], row["project"], int(row["created_ms"]) / 1000,
                   None if revoked is None else int(revoked) / 1000, validate_role(row["role"]))
    return StoredKey(row["key_hash"], info)


@contextmanager
def open_key_book(data_dir: str | os.PathLike[str], clickhouse_url: str | None, cluster: str | None = None, *,
                  create: bool) -> Iterator[KeyBook]:
    """The key book a collector with these options reads, closed on exit: the store's tables with
    ``clickhouse_url``, else the data directory's key file. Without ``create``, a missing key file
    raises :class:`FileNotFoundError` (a read makes nothing); a store that cannot be opened raises
    :class:`~infersight.collector.errors.StoreError` (``ValueError`` for a malformed URL)."""
    if clickhouse_url:
        store = ClickHouseStore(clickhouse_url, cluster=cluster)
        try:
            book = StoreKeys(store, background=False)
            yield book
        finally:
            store.close()
        return
    keys = ProjectKeys(data_dir, create=create)
    try:
        yield keys
    finally:
        keys.close()
