"""The :class:`Store` protocol both backends implement, and the rows they take."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import orjson

from ..errors import PayloadTooLarge, StoreError


def encode_rows(rows: Iterable[Mapping[str, Any]], *, limit_bytes: int | None = None) -> bytes:
    """``rows`` as JSONEachRow bytes (one object per line), the form :meth:`Store.insert` takes.

    Lone surrogates, which ClickHouse rejects, become ``?`` instead of failing the insert.
    Raises :class:`PayloadTooLarge` as soon as the text passes ``limit_bytes``, if given.
    """
    out = bytearray()
    for row in rows:
        if limit_bytes is not None and len(out) > limit_bytes:
            raise PayloadTooLarge(f"the spans encode to more than {limit_bytes} bytes of rows")
        try:
            out += orjson.dumps(row)  # several times faster than json: this runs per span at ingest
        except (orjson.JSONEncodeError, TypeError):  # lone surrogates, ints beyond 64 bits
            out += json.dumps(row, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "replace")
        out += b"\n"
    return bytes(out)


def decode_rows(data: bytes) -> list[dict[str, Any]]:
    """The rows of a JSONEachRow answer, as both backends' ``query`` return them.

    One document of all rows, parsed by orjson: a parse per row costs ~10 us of call overhead
    each (a start-up read of 700k history rows spent 5 s in it), and orjson with the rows
    joined in one ``replace`` takes about 0.7x the standard parser's time. ClickHouse quotes
    64-bit integers and the schema holds no wider ones (orjson would read those as floats);
    what orjson refuses goes to the standard parser, which reads it or raises as it did.
    """
    # JSON escapes a newline within a string, so each raw one ends a row
    document = b"[" + data.strip(b"\n").replace(b"\n", b",") + b"]"
    try:
        rows: list[dict[str, Any]] = orjson.loads(document)
    except orjson.JSONDecodeError:
        rows = json.loads(document)
    return rows


SESSION_TIMEZONE = "UTC"
"""The time zone of every store session: times are bound, compared and bucketed in UTC, whatever
the machine's zone (the embedded store starts chDB in UTC). On a ClickHouse server whose own zone
is another, a session in UTC reads bound times and ``now()`` in UTC, but the columns of tables it
opened from disk keep the server's zone for ``toDate`` and ``toMonday`` (not for ``toStartOfHour``,
``toStartOfDay`` or ``toStartOfInterval``): a query that takes the day of a stored time names the
zone (``toDate(ts, 'UTC')``). The partitions of such a server are its own days, which only
changes how parts are grouped on disk."""

_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_TOKEN = re.compile(r"^[0-9a-f]{1,128}$")


def insert_settings(table: str, dedup_token: str | None) -> dict[str, str | int]:
    """The ClickHouse settings of an insert into ``table``, after checking both arguments.

    Both are ours (table names and spool tokens), and the checks guarantee an identifier and
    lowercase hex, so a backend may format them into a statement without injecting anything.
    The dedup setting of views is said explicitly because older ClickHouse defaults it to 0: a
    repeat must be dropped in the views' tables (llm_spans) as well, not only in ``table``.
    """
    if not _TABLE.match(table):
        raise ValueError(f"The 'table' parameter of insert must be an identifier; got {table!r}.")
    if dedup_token is None:
        return {}
    if not _TOKEN.match(dedup_token):
        raise ValueError(f"The 'dedup_token' parameter of insert must be lowercase hex; got {dedup_token!r}.")
    return {"insert_deduplication_token": dedup_token, "deduplicate_blocks_in_dependent_materialized_views": 1}


_CODE = re.compile(r"Code: \d+")
_ERROR_NAME = re.compile(r"\(([A-Z][A-Z0-9_]+)\)")
# ClickHouse errors that pass by themselves or by an operator's hand (overload, limits, disks,
# replication, permissions): the rows are not at fault, so the writer retries them as they are.
_TRANSIENT = frozenset({
    "ABORTED", "ACCESS_DENIED", "ALL_CONNECTION_TRIES_FAILED", "ALL_REPLICAS_ARE_STALE",
    "AUTHENTICATION_FAILED", "CANNOT_ALLOCATE_MEMORY", "CANNOT_FSYNC", "CANNOT_SCHEDULE_TASK",
    "CANNOT_WRITE_TO_FILE_DESCRIPTOR", "KEEPER_EXCEPTION", "MEMORY_LIMIT_EXCEEDED",
    "NETWORK_ERROR", "NO_ZOOKEEPER", "NOT_ENOUGH_SPACE", "QUERY_WAS_CANCELLED", "QUOTA_EXCEEDED",
    "READONLY", "SERVER_OVERLOADED", "SOCKET_TIMEOUT", "TABLE_IS_DROPPED", "TABLE_IS_READ_ONLY",
    "TIMEOUT_EXCEEDED", "TOO_MANY_PARTS", "TOO_MANY_SIMULTANEOUS_QUERIES", "UNKNOWN_DATABASE",
    "UNKNOWN_STATUS_OF_INSERT", "UNKNOWN_TABLE",
})


def insert_error(table: str, exc: BaseException) -> StoreError:
    """``exc`` raised by an insert into ``table`` as a :class:`StoreError`.

    Transient unless ClickHouse answered with an error about the rows themselves: a store that
    cannot be reached, or one that is overloaded, will take the same rows later.
    """
    message = str(exc)
    transient = True
    if _CODE.search(message):  # ClickHouse answered, with an exception
        # TOO_MANY_PARTS is also the name of "too many partitions for single INSERT block",
        # which no wait cures: the rows span too many days.
        names = set(_ERROR_NAME.findall(message))
        transient = bool(names & _TRANSIENT) and "partitions for single INSERT block" not in message
    return StoreError(f"insert into {table} failed: {message}", transient=transient)


def query_error(exc: BaseException) -> StoreError:
    """``exc`` raised by a query as a :class:`StoreError`.

    Transient (an outage: readers answer 503 and ask to retry) unless ClickHouse answered with
    an error that is not one of the passing kinds: then the query itself is at fault, and the
    same query will fail the same way however often it is retried.
    """
    message = str(exc)
    transient = not _CODE.search(message) or bool(set(_ERROR_NAME.findall(message)) & _TRANSIENT)
    return StoreError(f"query failed: {message}", transient=transient)


class Store(Protocol):
    """A ClickHouse database holding the infersight schema.

    Every method blocks until ClickHouse has answered and may be called from any thread.
    They raise :class:`StoreError` when the store cannot do what was asked.
    """

    def insert(self, table: str, rows: bytes, *, dedup_token: str | None = None) -> None:
        """Append JSONEachRow ``rows`` (see :func:`encode_rows`) to ``table`` as one insert.

        ``dedup_token`` (lowercase hex) makes the insert idempotent: ClickHouse drops a repeat of
        a recent insert with the same token, in ``table`` and in its materialized views.
        Returns only once the rows are in; raises :class:`StoreError` (with ``transient`` set
        as the store's answer allows) when they are not.
        """
        ...

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a SELECT with ``{name:Type}`` placeholders bound from ``params``; rows as dicts.

        Values are Python values: a ``str`` for ``String``, a list (or tuple) of them for
        ``Array(String)``; each backend binds them as its transport needs.
        """
        ...

    def close(self) -> None: ...
