"""The embedded ClickHouse (chDB) backend of :class:`~._base.Store`."""

from __future__ import annotations

import fcntl
import os
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from ..errors import DataDirLocked, StoreError
from . import _schema
from ._base import SESSION_TIMEZONE, decode_rows, insert_error, insert_settings, query_error

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class ChdbStore:
    """The ClickHouse engine in-process, persisted under ``data_dir``, in database ``database``.

    chDB allows one data directory per process, and two processes must not share one; an
    advisory lock file enforces the second rule with an error that names the owner.
    """

    def __init__(self, data_dir: str | os.PathLike[str], *, database: str = "infersight") -> None:
        _engine_in_utc()
        from chdb import session

        if not _IDENTIFIER.match(database):
            raise ValueError(f"The 'database' parameter of ChdbStore must be an identifier; got {database!r}.")
        self.data_dir = Path(data_dir).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.database = database
        self._lock_file = _lock_data_dir(self.data_dir)
        self._lock = threading.Lock()
        try:
            self._session = session.Session(str(self.data_dir / "clickhouse"))
            # The engine's own zone, checked rather than set per session: a session setting does not
            # reach the columns of tables opened from disk (see _engine_in_utc).
            zone = self._session.query("SELECT serverTimezone()", "CSV").bytes().decode().strip().strip('"')
            if zone != SESSION_TIMEZONE:
                raise StoreError(f"the engine's time zone is {zone}, not {SESSION_TIMEZONE}: chDB was started in this "
                                 "process before the store (start it with TZ=UTC)")
            self._session.query(f"CREATE DATABASE IF NOT EXISTS {database}")
            self._session.query(f"USE {database}")
            self._apply_schema()
        except Exception as exc:
            self._lock_file.close()
            raise StoreError(f"cannot open the embedded store in {self.data_dir}: {exc}") from exc

    def _apply_schema(self) -> None:
        # The statements are idempotent, but their 60-odd DDL round trips cost 1-2.5 s an open on
        # a loaded 2-core machine (every collector restart, every CLI command reading the store).
        # A marker in the engine's own directory (gone with it) records the schema last applied
        # and how many tables it left; a table dropped since, or any change to the DDL, applies it all again.
        statements = _schema.statements()
        fingerprint = _schema.fingerprint(statements)
        marker = self.data_dir / "clickhouse" / f"schema-{self.database}.txt"
        if marker.is_file() and marker.read_text() == f"{fingerprint} {self._table_count()}":
            return
        for statement in statements:
            self._session.query(statement)
        marker.write_text(f"{fingerprint} {self._table_count()}")

    def _table_count(self) -> int:
        result = self._session.query("SELECT count() FROM system.tables WHERE database = currentDatabase()", "CSV")
        return int(result.bytes())

    def insert(self, table: str, rows: bytes, *, dedup_token: str | None = None) -> None:
        if not rows:
            return
        # send_insert takes no bound parameters: the settings are checked values, formatted in.
        settings = insert_settings(table, dedup_token)
        statement = f"INSERT INTO {table}"
        if settings:
            statement += " SETTINGS " + ", ".join(f"{name} = {value!r}" for name, value in settings.items())
        with self._lock:
            try:
                if dedup_token is None:
                    self._session.query(f"{statement} FORMAT JSONEachRow\n".encode() + rows)
                else:
                    self._insert_verified(statement, rows)
            except Exception as exc:
                raise insert_error(table, exc) from exc

    def _insert_verified(self, statement: str, rows: bytes) -> None:
        # send_insert parses rows 3-4x faster than a query carrying them, but chDB does not raise
        # what fails at commit (more than 100 partitions, a view's error): finish() returns and
        # the rows are gone. ClickHouse counts every error in system.errors, and this lock keeps
        # other queries of ours out, so a moved count means this insert may have failed; the
        # query path then says for sure. It is idempotent here (the caller's token), so it also
        # cannot double rows if the count moved for another reason (a background merge).
        before = self._errors_seen()
        with self._session.send_insert(statement, "JSONEachRow") as inserter:
            inserter.append(rows)
            inserter.finish()
        if self._errors_seen() != before:
            self._session.query(f"{statement} FORMAT JSONEachRow\n".encode() + rows)

    def _errors_seen(self) -> int:
        return int(self._session.query("SELECT sum(value) FROM system.errors", "CSV").bytes() or 0)

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        text = {name for name, kind in _PLACEHOLDER.findall(sql) if _SCALAR_STRING.match(kind)}
        bound = {k: _bound(v, k in text) for k, v in (params or {}).items()}
        with self._lock:
            try:
                result = self._session.query(sql, "JSONEachRow", params=bound)
            except Exception as exc:
                raise query_error(exc) from exc
        return decode_rows(result.bytes())

    def close(self) -> None:
        with self._lock:
            self._session.close()
        self._lock_file.close()


def _engine_in_utc() -> None:
    """Start chDB in UTC: every time the collector writes, binds and buckets is UTC, and chDB takes
    its zone from the process's TZ when it first starts. On a laptop in New York a bound
    '2026-12-06 13:00:00' was read as 18:00 UTC, and days (partitions, rollups, the report's week)
    were New York's: ``session_timezone`` alone does not move the columns of tables already on
    disk, which take the engine's zone when the store opens them. So the process's TZ is set to UTC
    before chDB starts, which also makes its local time (log lines) UTC."""
    if os.environ.get("TZ") != SESSION_TIMEZONE:
        os.environ["TZ"] = SESSION_TIMEZONE
        time.tzset()


_PLACEHOLDER = re.compile(r"\{(\w+):\s*([^}]+)\}")
_SCALAR_STRING = re.compile(r"^(Nullable\()?(LowCardinality\()?String\)*$")


def _bound(value: Any, is_text: bool) -> Any:
    if isinstance(value, (list, tuple)):
        # chDB binds the text of a value; an array's text is its literal, strings quoted and
        # escaped, so ClickHouse's value parser (never the SQL parser) reads it.
        return "[" + ",".join(_element(v) for v in value) + "]"
    return _escaped(value) if is_text and isinstance(value, str) else value


def _element(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return repr(value)


def _escaped(value: str) -> str:
    # ClickHouse reads the text of a String query parameter with TSV escaping: unescaped, "a\\tb"
    # would arrive as a tab, "\\N" as NULL, and a real tab would fail the query. clickhouse-connect
    # escapes for the server backend; chDB takes the text as it is, so it is escaped here, for
    # every caller. Array literals are not: their own parser reads the quoting and escapes.
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _lock_data_dir(data_dir: Path) -> IO[str]:
    path = data_dir / "owner.lock"
    handle = open(path, "a+")  # noqa: SIM115 - the handle holds the lock; the caller keeps and closes it
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
