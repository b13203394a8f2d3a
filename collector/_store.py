"""Where spans live: the :class:`Store` protocol and its embedded ClickHouse (chDB) backend."""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from . import _schema
from ._errors import DataDirLocked, StoreError

_DATABASE = "infersight"


class Store(Protocol):
    """A ClickHouse database holding the infersight schema.

    Both methods block until ClickHouse has answered and may be called from any thread.
    They raise :class:`StoreError` when the store cannot do what was asked.
    """

    def insert(self, table: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """Append ``rows`` (column name -> value) to ``table``; returns the number written."""
        ...

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a SELECT with ``{name:Type}`` placeholders bound from ``params``; rows as dicts."""
        ...

    def close(self) -> None: ...


class ChdbStore:
    """The ClickHouse engine in-process, persisted under ``data_dir``.

    chDB allows one data directory per process, and two processes must not share one; an
    advisory lock file enforces the second rule with an error that names the owner.
    """

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        from chdb import session

        self.data_dir = Path(data_dir).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._lock_file = _lock_data_dir(self.data_dir)
        self._lock = threading.Lock()
        try:
            self._session = session.Session(str(self.data_dir / "clickhouse"))
            self._session.query(f"CREATE DATABASE IF NOT EXISTS {_DATABASE}")
            self._session.query(f"USE {_DATABASE}")
            for statement in _schema.statements():
                self._session.query(statement)
        except Exception as exc:
            self._lock_file.close()
            raise StoreError(f"cannot open the embedded store in {self.data_dir}: {exc}") from exc

    def insert(self, table: str, rows: Sequence[Mapping[str, Any]]) -> int:
        if not rows:
            return 0
        payload = "\n".join(json.dumps(row, separators=(",", ":")) for row in rows) + "\n"
        with self._lock:
            try:
                with self._session.send_insert(f"INSERT INTO {table}", "JSONEachRow") as inserter:
                    inserter.append(payload)
                    inserter.finish()
            except Exception as exc:
                raise StoreError(f"insert into {table} failed: {exc}") from exc
        return len(rows)

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        with self._lock:
            try:
                result = self._session.query(sql, "JSONEachRow", params=dict(params or {}))
            except Exception as exc:
                raise StoreError(f"query failed: {exc}") from exc
        data = result.bytes()
        return [json.loads(line) for line in data.splitlines() if line]

    def close(self) -> None:
        with self._lock:
            self._session.close()
        self._lock_file.close()


def _lock_data_dir(data_dir: Path):  # -> open file holding the lock
    path = data_dir / "owner.lock"
    handle = open(path, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        owner = handle.read().strip() or "another process"
        handle.close()
        raise DataDirLocked(
            f"the data directory {data_dir} is in use by {owner}; "
            "talk to that collector over HTTP or stop it first"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    return handle
