"""Project API keys, kept hashed in a small SQLite file next to the store (``keys.db``).

SQLite rather than a ClickHouse table: the embedded store belongs to one process, but keys are
managed by ``infersight keys`` while the collector runs. SQLite lets both open the file at once,
a revocation reaches the running collector without an admin API, and the store keeps holding
only telemetry. Collectors on a ClickHouse server share their keys in the store instead
(:mod:`._store_keys`); both implement :class:`KeyBook`.

Each key has a role (:mod:`._roles`). The file of a version without roles gains the column on
first open, its keys as ``admin``: they did everything then, and keep doing it.

A key is ``isk_`` plus 256 random bits. Only its SHA-256 is stored: with that much entropy a
plain hash cannot be reversed by guessing, so no salt or slow KDF is needed. The first
:data:`PREFIX_CHARS` characters are stored too, to show and revoke a key without knowing it.
"""

from __future__ import annotations

import builtins
import hashlib
import os
import re
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ._roles import LEGACY_ROLE, Grant, Role, validate_role

KEY_PREFIX = "isk_"
PREFIX_CHARS = 12
KEYS_FILE = "keys.db"
_KEY = re.compile(r"^isk_[A-Za-z0-9_-]{20,128}$")
_PROJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS project_keys (
    key_hash TEXT PRIMARY KEY,
    prefix TEXT NOT NULL UNIQUE,
    project TEXT NOT NULL,
    created_s REAL NOT NULL,
    revoked_s REAL,
    role TEXT NOT NULL DEFAULT 'admin'
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ended_sessions (session_id TEXT PRIMARY KEY, until_s REAL NOT NULL);
"""


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """One key as listed: never the key itself."""

    prefix: str
    project: str
    created_s: float
    revoked_s: float | None
    role: Role = LEGACY_ROLE

    @property
    def active(self) -> bool:
        return self.revoked_s is None


def hash_key(key: str) -> str:
    """The stored form of ``key``: SHA-256, hex."""
    return hashlib.sha256(key.encode()).hexdigest()


def looks_like_key(key: str) -> bool:
    """Whether ``key`` has the shape of an infersight key (checked before any lookup)."""
    return bool(_KEY.match(key))


def validate_project(project: str) -> str:
    if not _PROJECT.match(project):
        raise ValueError(
            "The project name must be 1-64 letters, digits, '.', '_' or '-', starting with a "
            f"letter or digit; got {project!r}."
        )
    return project


@dataclass(frozen=True, slots=True)
class StoredKey:
    """One key as stored: its hash, never the key. What a move to another :class:`KeyBook` copies."""

    key_hash: str
    info: KeyInfo


class KeyBook(Protocol):
    """Where a deployment keeps its keys, the sessions ended early, and the cookie secret.

    Safe to use from several threads. Every method blocks on a read or write of the backing
    file or store, and raises what that backend raises when it cannot be reached.
    """

    def create(self, project: str, *, role: Role = LEGACY_ROLE) -> tuple[str, KeyInfo]: ...

    def list(self) -> list[KeyInfo]: ...

    def revoke(self, prefix: str) -> KeyInfo: ...

    def grant_for_hash(self, key_hash: str) -> Grant | None: ...

    def grant_for_session(self, prefix: str, session_id: str) -> Grant | None: ...

    def end_session(self, session_id: str, until_s: float, *, now_s: float | None = None) -> None: ...

    def has_active_keys(self) -> bool: ...

    def session_secrets(self) -> builtins.list[bytes]:
        """The secrets a cookie may be signed with; new cookies are signed with the first."""
        ...

    def close(self) -> None: ...


def new_key(project: str, role: Role) -> tuple[str, KeyInfo]:
    """A fresh random key and its listing (not stored anywhere yet)."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    return key, KeyInfo(key[:PREFIX_CHARS], project, time.time(), None, role)


class ProjectKeys:
    """The key file of one data directory (a :class:`KeyBook`).

    Safe to open from several processes at once (the collector and the CLI) and to use from
    several threads. Every method blocks on a small SQLite read or write.
    """

    def __init__(self, data_dir: str | os.PathLike[str], *, create: bool = True) -> None:
        """Open (and with ``create``, make) the key file of ``data_dir``; without ``create``, a
        missing file raises :class:`FileNotFoundError` and nothing is made (a read makes nothing)."""
        self.path = Path(data_dir) / KEYS_FILE
        if not create and not self.path.is_file():
            raise FileNotFoundError(f"no key file in {data_dir} (no {KEYS_FILE}); is it the collector's --data-dir?")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Created private before SQLite opens it; SQLite gives its -wal and -shm files the same mode.
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10)
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = FULL")
        self._db.executescript(_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(project_keys)")}
        if "role" not in columns:  # a file from before roles: its keys did everything, so admin
            self._db.execute(f"ALTER TABLE project_keys ADD COLUMN role TEXT NOT NULL DEFAULT '{LEGACY_ROLE}'")
        self._secrets: list[bytes] | None = None
        self._lock = threading.Lock()  # one statement at a time on the shared connection

    def create(self, project: str, *, role: Role = LEGACY_ROLE) -> tuple[str, KeyInfo]:
        """A new key for ``project`` with ``role``: the key (show it once, it is not stored) and
        its listing. The default role is the one keys had before roles existed (the CLI asks
        for the least: ``ingest``)."""
        validate_project(project)
        validate_role(role)
        while True:
            key, info = new_key(project, role)
            try:
                self._execute(
                    "INSERT INTO project_keys (key_hash, prefix, project, created_s, role) VALUES (?, ?, ?, ?, ?)",
                    (hash_key(key), info.prefix, project, info.created_s, role),
                )
            except sqlite3.IntegrityError:
                continue  # two keys sharing a display prefix: 2^-48, but draw again
            return key, info

    def list(self) -> list[KeyInfo]:
        rows = self._execute(
            "SELECT prefix, project, created_s, revoked_s, role FROM project_keys ORDER BY project, created_s"
        )
        return [KeyInfo(*row) for row in rows]

    def stored(self) -> builtins.list[StoredKey]:
        """Every key with its hash, revoked ones too: what moving the keys elsewhere copies."""
        rows = self._execute("SELECT key_hash, prefix, project, created_s, revoked_s, role FROM project_keys")
        return [StoredKey(row[0], KeyInfo(*row[1:])) for row in rows]

    def revoke(self, prefix: str) -> KeyInfo:
        """Revoke the one key whose display prefix starts with ``prefix`` (at least 8 characters).

        Raises ``ValueError`` when no key or more than one key matches. Revoking twice is a no-op.
        """
        if len(prefix) < 8:
            raise ValueError(f"Give at least 8 characters of the key prefix; got {prefix!r}.")
        matches = self._execute(
            "SELECT prefix, project, created_s, revoked_s, role FROM project_keys"
            " WHERE substr(prefix, 1, length(?1)) = ?1",
            (prefix,),
        )
        if len(matches) != 1:
            found = "no key" if not matches else f"{len(matches)} keys"
            raise ValueError(f"{found} with a prefix starting {prefix!r}; see 'infersight keys list'.")
        info = KeyInfo(*matches[0])
        if info.active:
            revoked_s = time.time()
            self._execute("UPDATE project_keys SET revoked_s = ? WHERE prefix = ?", (revoked_s, info.prefix))
            info = KeyInfo(info.prefix, info.project, info.created_s, revoked_s, info.role)
        return info

    def grant_for_hash(self, key_hash: str) -> Grant | None:
        """The project and role of the active key with this hash, or ``None``."""
        rows = self._execute(
            "SELECT key_hash, project, role FROM project_keys WHERE key_hash = ? AND revoked_s IS NULL",
            (key_hash,),
        )
        # The lookup goes through an index; comparing again in constant time keeps the answer
        # independent of how much of the hash matched, whatever the index does.
        if not rows or not secrets.compare_digest(rows[0][0], key_hash):
            return None
        return Grant(rows[0][1], validate_role(rows[0][2]))

    def grant_for_session(self, prefix: str, session_id: str) -> Grant | None:
        """The project and role of the active key with display prefix ``prefix``, or ``None``
        when that key is revoked or the session ``session_id`` has ended."""
        rows = self._execute(
            "SELECT project, role FROM project_keys WHERE prefix = ? AND revoked_s IS NULL"
            " AND NOT EXISTS (SELECT 1 FROM ended_sessions WHERE session_id = ?)",
            (prefix, session_id),
        )
        return Grant(rows[0][0], validate_role(rows[0][1])) if rows else None

    def end_session(self, session_id: str, until_s: float, *, now_s: float | None = None) -> None:
        """Remember that ``session_id`` has ended until ``until_s``, when its cookie expires anyway;
        forget the sessions whose cookies have expired."""
        now = time.time() if now_s is None else now_s
        self._execute("DELETE FROM ended_sessions WHERE until_s < ?", (now,))
        self._execute(
            "INSERT OR REPLACE INTO ended_sessions (session_id, until_s) VALUES (?, ?)", (session_id, until_s)
        )

    def has_active_keys(self) -> bool:
        return bool(self._execute("SELECT 1 FROM project_keys WHERE revoked_s IS NULL LIMIT 1"))

    def session_secrets(self) -> builtins.list[bytes]:
        """The one key that signs dashboard cookies, made on first use and kept with the key hashes."""
        if self._secrets is None:
            self._execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('session_secret', ?)", (secrets.token_hex(32),)
            )
            secret: str = self._execute("SELECT value FROM meta WHERE key = 'session_secret'")[0][0]
            self._secrets = [bytes.fromhex(secret)]
        return self._secrets

    # builtins.list: in the class body, plain `list` is the method above; a row holds each
    # column's SQLite value (text, integer, real or NULL), typed where it is read
    def _execute(self, sql: str, params: tuple[object, ...] = ()) -> builtins.list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def close(self) -> None:
        with self._lock:
            self._db.close()
