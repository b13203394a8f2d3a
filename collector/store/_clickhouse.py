"""The ClickHouse server backend of :class:`~._base.Store`, through clickhouse-connect.

Same schema files, same SQL, same JSONEachRow in and out as the embedded store: the two
backends differ only in transport. With a cluster name, the schema is created ``ON CLUSTER``
with Replicated tables and Distributed tables for reads and writes (see ``_schema``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlparse

from ..errors import StoreError
from . import _schema
from ._base import SESSION_TIMEZONE, decode_rows, insert_error, insert_settings, query_error

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Which schema this database holds (see ClickHouseStore._apply_schema); not one of the schema's tables.
_MARKER = "schema_applied"



class ClickHouseStore:
    """A ClickHouse server (or cluster) at ``url``: ``http[s]://user:password@host:port/database``.

    Thread-safe (clickhouse-connect's HTTP client keeps no session state here). Methods block
    until the server answers and raise :class:`StoreError` when it does not.
    """

    def __init__(self, url: str, *, cluster: str | None = None, connect_timeout_s: float = 10.0) -> None:
        import clickhouse_connect

        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"The 'clickhouse_url' setting must look like http://user:pass@host:8123/db; got {url!r}.")
        self.database = (parsed.path or "/").strip("/") or "infersight"
        if not _IDENTIFIER.match(self.database):
            raise ValueError(f"The database in 'clickhouse_url' must be an identifier; got {self.database!r}.")
        self.cluster = cluster
        options: dict[str, Any] = {
            "host": parsed.hostname,
            "port": parsed.port or (8443 if parsed.scheme == "https" else 8123),
            "username": unquote(parsed.username or "default"),
            "password": unquote(parsed.password or ""),
            "secure": parsed.scheme == "https",
            "connect_timeout": connect_timeout_s,
            "autogenerate_session_id": False,
            # A server's own time zone may be another: bound times and now() are read in UTC (sent
            # with every request; a server older than ClickHouse 23.6 lacks the setting). Columns of
            # tables it loads from disk keep its zone for toDate(): SESSION_TIMEZONE's note.
            "settings": {"session_timezone": SESSION_TIMEZONE},
        }
        try:
            admin = clickhouse_connect.get_client(**options, database="default")
            on = f" ON CLUSTER {cluster}" if cluster else ""
            admin.command(f"CREATE DATABASE IF NOT EXISTS {self.database}{on}")
            admin.close()
            self._client = clickhouse_connect.get_client(**options, database=self.database)
            self._apply_schema(_schema.cluster_statements(cluster, self.database) if cluster else _schema.statements())
        except ValueError:
            raise
        except Exception as exc:
            raise StoreError(f"cannot open the ClickHouse store at {parsed.hostname}: {exc}") from exc

    def _apply_schema(self, ddl: list[str]) -> None:
        # As the embedded store does (its _apply_schema): the 60-odd DDL round trips cost ~0.5 s
        # an open, for every collector start and CLI command. The marker lives in the database
        # (on the node this client reaches: another node without it applies the schema again,
        # which is idempotent), with the count of tables the schema left.
        fingerprint = _schema.fingerprint(ddl)
        try:
            applied = self._client.query(f"SELECT fingerprint, tables FROM {_MARKER} ORDER BY at DESC LIMIT 1")
            if applied.result_rows and tuple(applied.result_rows[0]) == (fingerprint, self._table_count()):
                return
        except Exception:  # noqa: BLE001 - no marker yet (a new database), or unreadable: apply
            pass
        for statement in ddl:
            self._client.command(statement)
        self._client.command(f"CREATE TABLE IF NOT EXISTS {_MARKER} (fingerprint String, tables UInt64,"
                             " at DateTime64(3) DEFAULT now64(3)) ENGINE = MergeTree ORDER BY at")
        self._client.command(f"INSERT INTO {_MARKER} (fingerprint, tables) VALUES ({{f:String}}, {{n:UInt64}})",
                             parameters={"f": fingerprint, "n": self._table_count()})

    def _table_count(self) -> int:
        counted = self._client.query(
            f"SELECT count() FROM system.tables WHERE database = currentDatabase() AND name != '{_MARKER}'")
        return int(counted.result_rows[0][0])

    def insert(self, table: str, rows: bytes, *, dedup_token: str | None = None) -> None:
        if not rows:
            return
        settings = insert_settings(table, dedup_token)
        try:
            self._client.raw_insert(table, None, rows, fmt="JSONEachRow", settings=settings)
        except Exception as exc:
            raise insert_error(table, exc) from exc

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        try:
            # clickhouse-connect formats a list as an array literal (a tuple would be a tuple).
            bound = {k: list(v) if isinstance(v, tuple) else v for k, v in (params or {}).items()}
            data = self._client.raw_query(sql, parameters=bound, fmt="JSONEachRow")
        except Exception as exc:
            raise query_error(exc) from exc
        return decode_rows(data)

    def close(self) -> None:
        self._client.close()
