"""The spool: acknowledged spans wait here, on disk, until the writer has stored them.

One SQLite file in WAL mode under the data directory. An entry is one request: its
``otel_traces`` rows and the inline detectors' ``detections`` rows, both LZ4-compressed
JSONEachRow. :meth:`Spool.append` returns only once the entry is committed, so a 200 to the
exporter never depends on the store being up. The writer takes entries back in batches
(:meth:`Spool.next_batch`) and deletes them once stored (:meth:`Spool.done`).

Spans are not held back by their analysis: a batch the inline detectors have yet to see is
marked stored (``done(batch, analyse=True)``) and its entries stay, as the backlog of analysis
(table ``analysis``: the batch's id range and the spans left out of its insert), until the
detectors' thread has stored its detections (:meth:`Spool.next_analysis`, :meth:`Spool.analysed`).
So a crash loses no analysis, and the analysis of a batch reads the very rows that were inserted.

Exactly once into ClickHouse, across crashes: a batch's id range is recorded (durably) before it
is inserted, and the insert carries a deduplication token derived from that range. After a crash
the same range comes back with the same token, and ClickHouse drops the repeat if the first
attempt had landed. Entry ids are never reused (``AUTOINCREMENT``) and the token starts with a
random id of this spool file, so a token never names two different batches.

Each entry also keeps its spans' keys (``Timestamp TraceId SpanId`` per line, line ``i`` for
row ``i``), so a batch can drop a span it holds twice, and the writer can drop the spans the
store already holds, without parsing a row; and its raw (uncompressed) size, which is what a
batch costs in memory once decompressed and parsed, so batches are capped by it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import secrets
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import lz4.frame
import orjson

from ..errors import SpoolError, SpoolFull

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    received_s REAL NOT NULL,
    project TEXT NOT NULL,
    row_count INTEGER NOT NULL,
    body BLOB NOT NULL,
    detections BLOB NOT NULL DEFAULT x'',
    first_day INTEGER,
    last_day INTEGER,
    span_keys BLOB NOT NULL DEFAULT x'',
    raw_bytes INTEGER
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS analysis (first_id INTEGER PRIMARY KEY, last_id INTEGER NOT NULL, dropped TEXT NOT NULL);
"""


_LZ4_MAGIC = b"\x04\x22\x4d\x18"

# ClickHouse refuses an insert whose rows fall into more than 100 partitions
# (max_partitions_per_insert_block), and the span tables are partitioned by day.
MAX_DAYS = 100

SpanKey = tuple[str, str, str]
"""A span's identity: (project, TraceId, SpanId), ids as ``otel_traces`` writes them (hex)."""


def _compress(data: bytes) -> bytes:
    # LZ4, not zlib: ~5x cheaper to compress and ~8x to decompress, for 8x instead of 11x on
    # span rows; at 20k spans/s zlib alone took a tenth of a core.
    compressed: bytes = lz4.frame.compress(data)  # lz4 ships no annotations
    return compressed


def _decompress(blob: bytes) -> bytes:
    if blob.startswith(_LZ4_MAGIC):
        data: bytes = lz4.frame.decompress(blob)
        return data
    return zlib.decompress(blob)  # written by a collector from before LZ4


@dataclass(frozen=True, slots=True)
class Entry:
    """One request as the spool keeps it: ``otel_traces`` rows and ``detections`` rows,
    each LZ4-compressed JSONEachRow (compressed by whoever builds the entry, so that work
    can happen outside the server process).

    ``days`` is the first and last day (since 1970-01-01, UTC) of the rows' timestamps, so the
    writer can merge entries into inserts that touch few partitions; ``None``: not known.
    ``keys_z``: the rows' ``Timestamp TraceId SpanId``, a line each, in row order, compressed
    (empty: not known, as in entries of older collectors). ``raw_bytes``: the uncompressed size
    of rows and detections (``None``: not known).
    """

    project: str
    rows_z: bytes
    row_count: int
    detections_z: bytes = b""
    days: tuple[int, int] | None = None
    keys_z: bytes = b""
    raw_bytes: int | None = None

    @classmethod
    def compress(
        cls, project: str, rows: bytes, row_count: int, detections: bytes = b"", *,
        days: tuple[int, int] | None = None, keys: Iterable[tuple[str, str, str]] | None = None,
    ) -> Entry:
        """An entry of JSONEachRow ``rows`` (and ``detections``); ``keys``: each row's
        ``(Timestamp, TraceId, SpanId)`` in row order, as text without spaces."""
        keys_z = _compress("".join(f"{ts} {trace} {span}\n" for ts, trace, span in keys).encode()) if keys else b""
        return cls(
            project, _compress(rows), row_count, _compress(detections) if detections else b"", days, keys_z,
            len(rows) + len(detections),
        )

    @property
    def size(self) -> int:
        return len(self.rows_z) + len(self.detections_z) + len(self.keys_z)

    def with_attributes(self, added: Mapping[int, Mapping[str, str]]) -> Entry:
        """This entry with ``added`` span attributes on the rows at those indexes (in row order)."""
        before = _decompress(self.rows_z)
        lines = before.split(b"\n")
        for index, attributes in added.items():
            row = orjson.loads(lines[index])
            row["SpanAttributes"].update(attributes)
            lines[index] = orjson.dumps(row)
        rows = b"\n".join(lines)
        raw_bytes = None if self.raw_bytes is None else self.raw_bytes + len(rows) - len(before)
        return dataclasses.replace(self, rows_z=_compress(rows), raw_bytes=raw_bytes)


def _merge(
    entries: list[tuple[bytes, str, bytes | None]],
) -> tuple[bytes, tuple[SpanKey | None, ...], tuple[int, ...]]:
    """Rows of ``(rows, project, keys)`` entries joined, each span once; their keys; their start times."""
    keys: list[SpanKey | None] = []
    times: list[int] = []
    for rows, project, key_lines in entries:
        for stamp, trace_id, span_id in _keys_of(rows, key_lines):
            keys.append((project, trace_id, span_id) if trace_id else None)
            times.append(stamp)
    known = [key for key in keys if key is not None]
    if len(set(known)) == len(known):  # the usual case: nothing repeats, nothing to split
        return b"".join(rows for rows, _, _ in entries), tuple(keys), tuple(times)
    seen: set[SpanKey] = set()
    out: list[bytes] = []
    kept: list[SpanKey | None] = []
    kept_times: list[int] = []
    lines = (line for rows, _, _ in entries for line in _lines(rows))
    for line, key, stamp in zip(lines, keys, times, strict=True):
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        out.append(line + b"\n")
        kept.append(key)
        kept_times.append(stamp)
    return b"".join(out), tuple(kept), tuple(kept_times)


def _keys_of(rows: bytes, key_lines: bytes | None) -> list[tuple[int, str, str]]:
    """``(Timestamp ns, TraceId, SpanId)`` of each row (``(0, "", "")``: not known)."""
    if key_lines is not None:
        out = []
        for line in key_lines.decode().splitlines():
            stamp, trace_id, span_id = line.split(" ")
            out.append((_ns(stamp), trace_id, span_id))
        return out
    # An entry of an older collector: its rows say it, at the cost of a parse this once.
    return [_key_in_row(line) for line in _lines(rows)]


def _lines(rows: bytes) -> list[bytes]:
    """JSONEachRow ``rows`` a line each (JSON escapes every newline inside a value)."""
    lines = rows.split(b"\n")
    return lines[:-1] if not lines[-1] else lines


def _key_in_row(line: bytes) -> tuple[int, str, str]:
    try:
        row = orjson.loads(line)
        key = (_ns(row["Timestamp"]), row["TraceId"], row["SpanId"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return 0, "", ""
    return key if all(isinstance(part, str) and part for part in key[1:]) else (0, "", "")


def _detection_key(line: bytes) -> SpanKey | None:
    try:
        row = orjson.loads(line)
        return row["project"], row["trace_id"], row["span_id"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None


def _indexes(text: str) -> list[int]:
    """Line indexes as :meth:`Spool.decide` records them, space-separated."""
    return [int(i) for i in text.split()]


def _ns(stamp: str) -> int:
    # ten digits of seconds, a dot, nine of nanoseconds, as detectors.row_time_text writes them
    seconds, _, fraction = stamp.partition(".")
    return int(seconds) * 1_000_000_000 + int(fraction.ljust(9, "0")[:9] or 0)


@dataclass(frozen=True, slots=True)
class SpoolDepth:
    """What waits in the spool: entries (one per request) and span rows not yet stored, stored
    bytes (the analysis backlog's included), the oldest unstored entry's age, and the span rows
    stored but not yet analysed (``backlog_rows``, in ``backlog_entries``)."""

    entries: int
    rows: int
    bytes: int
    max_bytes: int
    oldest_age_s: float
    backlog_entries: int = 0
    backlog_rows: int = 0


@dataclass(frozen=True, slots=True)
class Batch:
    """Entries ``first_id..last_id`` merged: ``rows`` for ``otel_traces`` and ``detections``
    for ``detections``, both JSONEachRow; ``projects`` they came from, ``received_s`` when the
    first of them was acknowledged.

    A span the entries hold more than once is in ``rows`` once (its first copy). ``keys`` are
    the spans of ``rows``, line ``i`` for row ``i`` (``None``: a row whose key is not known, which
    is never taken for a repeat); ``times`` their ``Timestamp`` values, Unix nanoseconds, one per
    key (0 where the key is not known). ``row_count`` counts the entries' rows, repeats
    included, as the spool does."""

    first_id: int
    last_id: int
    entries: int
    row_count: int
    rows: bytes
    detections: bytes
    dedup_token: str
    projects: tuple[str, ...]
    received_s: float
    keys: tuple[SpanKey | None, ...] = ()
    times: tuple[int, ...] = ()
    decided: bool = False

    def without(self, dropped: list[int]) -> Batch:
        """This batch less the rows at line indexes ``dropped`` (and their detections, if the
        entries carried any), marked decided: a line split, no span row is parsed."""
        if not dropped:  # the usual case: no copy of the rows
            return dataclasses.replace(self, decided=True)
        lines, drop = _lines(self.rows), set(dropped)
        kept = [i for i in range(len(lines)) if i not in drop]
        detections = self.detections
        if detections and drop:  # computed before the ack by an older collector: few, parsed
            gone = {self.keys[i] for i in drop}
            detections = b"".join(
                line + b"\n" for line in _lines(detections) if _detection_key(line) not in gone
            )
        # The token names what is inserted: never the whole batch's token for a part of it.
        token = self.dedup_token + hashlib.blake2b(" ".join(map(str, sorted(drop))).encode(), digest_size=8).hexdigest()
        return dataclasses.replace(
            self, rows=b"".join(lines[i] + b"\n" for i in kept), keys=tuple(self.keys[i] for i in kept),
            times=tuple(self.times[i] for i in kept), detections=detections, dedup_token=token, decided=True,
        )


@dataclass(slots=True)
class _Pending:
    entry: Entry
    received_s: float
    id: int = 0
    done: bool = False
    error: BaseException | None = field(default=None)


class Spool:
    """A durable FIFO of span rows.

    Args:
        path: the SQLite file; created with its directory if missing.
        max_bytes: :meth:`append` raises :class:`SpoolFull` rather than grow the stored
            (compressed) bytes beyond this.

    All methods are thread-safe and block on disk I/O (an fsync per commit).
    """

    def __init__(self, path: str | os.PathLike[str], *, max_bytes: int) -> None:
        if max_bytes <= 0:
            raise ValueError(f"The 'max_bytes' parameter of Spool must be positive; got {max_bytes}.")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        try:
            self._db = self._connect()
            self._db.executescript(_SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(entries)")}
            if "detections" not in columns:  # a spool written before detections travelled with spans
                self._db.execute("ALTER TABLE entries ADD COLUMN detections BLOB NOT NULL DEFAULT x''")
            if "first_day" not in columns:  # ... or before entries knew their days
                self._db.execute("ALTER TABLE entries ADD COLUMN first_day INTEGER")
                self._db.execute("ALTER TABLE entries ADD COLUMN last_day INTEGER")
            if "span_keys" not in columns:  # ... or before entries knew their spans and raw size
                self._db.execute("ALTER TABLE entries ADD COLUMN span_keys BLOB NOT NULL DEFAULT x''")
                self._db.execute("ALTER TABLE entries ADD COLUMN raw_bytes INTEGER")
            self._spool_id = self._meta("spool_id") or self._new_spool_id()
            self._stored_upto = int(self._meta("stored_upto") or 0)  # entries up to it: analysis backlog
            self._entries, self._rows, self._bytes = self._count("id > ?")
            self._backlog_entries, self._backlog_rows, self._backlog_bytes = self._count("id <= ?")
            # A second connection answers depth() while the first may be inside an fsync.
            self._reader = self._connect()
        except sqlite3.Error as exc:
            raise SpoolError(f"cannot open the spool {self.path}: {exc}") from exc
        self._queued_bytes = 0
        self._queue: list[_Pending] = []
        self._state = threading.Lock()  # counters and the queue
        self._commit = threading.Lock()  # the write connection; its holder commits the whole queue
        self._reader_lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        db.execute("PRAGMA journal_mode = WAL")
        # FULL, not NORMAL: a 200 tells the exporter to drop its copy, so the entry must survive
        # a power cut or kernel crash, not only a killed process. NORMAL in WAL mode skips the
        # fsync at commit, and a power cut may then roll back the last commits: precisely the
        # ones just acknowledged. The fsync (2-4 ms on this machine's disk) is shared by every
        # request waiting in the same group commit, see append().
        db.execute("PRAGMA synchronous = FULL")
        db.execute("PRAGMA journal_size_limit = 67108864")  # WAL shrinks back after a burst
        return db

    def _count(self, where: str) -> tuple[int, int, int]:
        counted: tuple[int, int, int] = self._db.execute(
            "SELECT count(*), coalesce(sum(row_count), 0),"
            f" coalesce(sum(length(body) + length(detections) + length(span_keys)), 0) FROM entries WHERE {where}",
            (self._stored_upto,),
        ).fetchone()
        return counted

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def _new_spool_id(self) -> str:
        spool_id = secrets.token_hex(8)
        self._db.execute("INSERT INTO meta (key, value) VALUES ('spool_id', ?)", (spool_id,))
        return spool_id

    def append(self, entry: Entry) -> int:
        """Store one request's ``entry`` durably; returns the entry id once committed.

        Raises :class:`SpoolFull` at the size limit and :class:`SpoolError` when the disk fails.
        Concurrent callers are committed together: whoever holds the commit lock writes every
        entry queued so far in one transaction, so N waiting requests cost one fsync.
        """
        item = _Pending(entry, time.time())
        with self._state:
            held = self._bytes + self._backlog_bytes + self._queued_bytes
            if held and held + entry.size > self.max_bytes:
                raise SpoolFull(
                    f"the spool holds {held} bytes and its limit is {self.max_bytes}; "
                    "the store is not keeping up, retry later"
                )
            self._queue.append(item)
            self._queued_bytes += entry.size
        with self._commit:
            if not item.done:
                with self._state:
                    group, self._queue = self._queue, []
                self._write(group)
        if item.error is not None:
            raise SpoolError(f"cannot write to the spool {self.path}: {item.error}") from item.error
        return item.id

    def _write(self, group: list[_Pending]) -> None:
        error: BaseException | None = None
        try:
            self._db.execute("BEGIN IMMEDIATE")
            for item in group:
                e = item.entry
                first_day, last_day = e.days or (None, None)
                cursor = self._db.execute(
                    "INSERT INTO entries (received_s, project, row_count, body, detections, first_day, last_day,"
                    " span_keys, raw_bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (item.received_s, e.project, e.row_count, e.rows_z, e.detections_z, first_day, last_day,
                     e.keys_z, e.raw_bytes),
                )
                item.id = cursor.lastrowid or 0
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            error = exc
            self._rollback()
        size = sum(item.entry.size for item in group)
        with self._state:
            self._queued_bytes -= size
            if error is None:
                self._entries += len(group)
                self._rows += sum(item.entry.row_count for item in group)
                self._bytes += size
        for item in group:
            item.error = error
            item.done = True

    def _rollback(self) -> None:
        try:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the connection is broken; the error that got us here is what gets reported

    def next_batch(self, *, max_rows: int, max_bytes: int, max_days: int = MAX_DAYS) -> Batch | None:
        """The oldest entries, merged, up to ``max_rows`` rows, ``max_bytes`` raw (uncompressed)
        bytes and rows of at most ``max_days`` consecutive days (an entry whose days or raw size
        are not known goes alone); a first entry above a limit makes a batch of its own. A span
        the entries hold twice is in the batch once.

        Returns the same batch again until :meth:`done` or :meth:`split` is called for it, also
        after a restart, so a retried insert carries the same entries and the same deduplication
        token. ``None`` when the spool is empty. Blocks on one small commit when it starts a new
        batch.
        """
        with self._commit:
            try:
                claimed = self._meta("batch")
                if claimed is None:
                    first_id, last_id = self._choose(max_rows, max_bytes, max_days)
                    if first_id is None:
                        return None
                    # Durable before the insert: after a crash the same range must be retried.
                    self._db.execute(
                        "INSERT OR REPLACE INTO meta (key, value) VALUES ('batch', ?)",
                        (f"{first_id} {last_id}",),
                    )
                else:
                    first_id, last_id = map(int, claimed.split())
                decision = self._meta("batch_drop")
                entries = self._entries_of(first_id, last_id)
            except sqlite3.Error as exc:
                raise SpoolError(f"cannot read the spool {self.path}: {exc}") from exc
        batch = self._batch(first_id, last_id, entries)
        return batch if decision is None else batch.without(_indexes(decision))

    def _entries_of(self, first_id: int, last_id: int) -> list[tuple[bytes, bytes, int, str, float, bytes]]:
        entries: list[tuple[bytes, bytes, int, str, float, bytes]] = self._db.execute(
            "SELECT body, detections, row_count, project, received_s, span_keys FROM entries"
            " WHERE id BETWEEN ? AND ? ORDER BY id",
            (first_id, last_id),
        ).fetchall()
        return entries

    def _batch(self, first_id: int, last_id: int, entries: list[tuple[bytes, bytes, int, str, float, bytes]]) -> Batch:
        try:
            merged = _merge([(_decompress(e[0]), e[3], _decompress(e[5]) if e[5] else None) for e in entries])
            detections = b"".join(_decompress(entry[1]) for entry in entries if entry[1])
        except (zlib.error, RuntimeError) as exc:  # RuntimeError: what lz4 raises for a bad frame
            raise SpoolError(f"spool entries {first_id}..{last_id} are corrupt: {exc}") from exc
        rows, keys, times = merged
        return Batch(
            first_id=first_id,
            last_id=last_id,
            entries=len(entries),
            row_count=sum(entry[2] for entry in entries),
            rows=rows,
            detections=detections,
            dedup_token=f"{self._spool_id}{first_id:016x}{last_id:016x}",
            projects=tuple(sorted({entry[3] for entry in entries})),
            received_s=entries[0][4] if entries else 0.0,
            keys=keys,
            times=times,
        )

    def decide(self, batch: Batch, held: set[SpanKey]) -> Batch:
        """Record, durably, that the spans of ``batch`` in ``held`` (which the store already
        holds) are not to be inserted, and return the batch without them.

        Recorded before the insert, so every retry of the batch (after a crash, or after an
        insert that failed half-way) inserts the same rows under the same token, and ClickHouse
        drops what had landed, in ``otel_traces`` and in its views alike; a new lookup would
        take the batch's own landed rows for repeats. Blocks on one small commit.
        """
        dropped = [i for i, key in enumerate(batch.keys) if key is not None and key in held]
        with self._commit:
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('batch_drop', ?)", (" ".join(map(str, dropped)),)
                )
            except sqlite3.Error as exc:
                raise SpoolError(f"cannot write to the spool {self.path}: {exc}") from exc
        return batch.without(dropped)

    def _choose(self, max_rows: int, max_bytes: int, max_days: int) -> tuple[int | None, int]:
        first_id: int | None = None
        last_id = 0
        rows = size = 0
        low, high = 1 << 62, -(1 << 62)
        # Every entry holds at least one row, so max_rows entries always suffice.
        for entry_id, row_count, raw_bytes, first_day, last_day in self._db.execute(
            "SELECT id, row_count, raw_bytes, first_day, last_day FROM entries WHERE id > ? ORDER BY id LIMIT ?",
            (self._stored_upto, max_rows),
        ):
            if first_day is None or raw_bytes is None:  # written by an older collector: alone, to be safe
                return (entry_id, entry_id) if first_id is None else (first_id, last_id)
            low, high = min(low, first_day), max(high, last_day)
            if first_id is not None and (
                rows + row_count > max_rows or size + raw_bytes > max_bytes or high - low >= max_days
            ):
                break
            first_id = entry_id if first_id is None else first_id
            last_id, rows, size = entry_id, rows + row_count, size + raw_bytes
        return first_id, last_id

    def split(self, batch: Batch) -> None:
        """Take back ``batch`` (two entries or more) and claim its first half instead.

        For a batch the store refuses because of what some entry holds: halving finds that
        entry in log2(entries) inserts while the others are stored. The half gets a token of
        its own, which is safe because the store refused the whole batch: none of it landed.
        """
        with self._commit:
            try:
                ids = [row[0] for row in self._db.execute(
                    "SELECT id FROM entries WHERE id BETWEEN ? AND ? ORDER BY id", (batch.first_id, batch.last_id)
                )]
                if len(ids) < 2:
                    raise ValueError(f"a batch of {len(ids)} entries cannot be split")
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('batch', ?)",
                    (f"{ids[0]} {ids[len(ids) // 2 - 1]}",),
                )
                self._db.execute("DELETE FROM meta WHERE key = 'batch_drop'")  # decided for the whole
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback()
                raise SpoolError(f"cannot write to the spool {self.path}: {exc}") from exc

    def done(self, batch: Batch, *, analyse: bool = False) -> None:
        """Forget ``batch``: its rows are in the store. With ``analyse``, keep its entries as the
        analysis backlog instead, with the spans left out of its insert, until :meth:`analysed`.
        Blocks on one commit."""
        with self._commit:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                size = self._size(batch)
                if analyse:
                    dropped = self._meta("batch_drop") or ""
                    self._db.execute("INSERT OR REPLACE INTO analysis (first_id, last_id, dropped) VALUES (?, ?, ?)",
                                     (batch.first_id, batch.last_id, dropped))
                    self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('stored_upto', ?)",
                                     (str(batch.last_id),))
                else:
                    self._db.execute("DELETE FROM entries WHERE id BETWEEN ? AND ?", (batch.first_id, batch.last_id))
                self._db.execute("DELETE FROM meta WHERE key IN ('batch', 'batch_drop')")
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback()
                raise SpoolError(f"cannot delete stored entries from the spool {self.path}: {exc}") from exc
        with self._state:
            self._entries -= batch.entries
            self._rows -= batch.row_count
            self._bytes -= size
            if analyse:
                self._stored_upto = batch.last_id
                self._backlog_entries += batch.entries
                self._backlog_rows += batch.row_count
                self._backlog_bytes += size

    def _size(self, batch: Batch) -> int:
        size: int = self._db.execute(
            "SELECT coalesce(sum(length(body) + length(detections) + length(span_keys)), 0) FROM entries"
            " WHERE id BETWEEN ? AND ?",
            (batch.first_id, batch.last_id),
        ).fetchone()[0]
        return size

    def next_analysis(self) -> Batch | None:
        """The oldest stored batch the detectors have yet to analyse, as it was inserted (the same
        rows, the same token); ``None`` when there is none. The same one until :meth:`analysed`."""
        with self._commit:
            try:
                found = self._db.execute("SELECT first_id, last_id, dropped FROM analysis ORDER BY first_id LIMIT 1"
                                         ).fetchone()
                if found is None:
                    return None
                entries = self._entries_of(found[0], found[1])
            except sqlite3.Error as exc:
                raise SpoolError(f"cannot read the spool {self.path}: {exc}") from exc
        return self._batch(found[0], found[1], entries).without(_indexes(found[2]))

    def analysed(self, batch: Batch) -> None:
        """Forget ``batch`` of :meth:`next_analysis`: its detections are stored. Blocks on one commit."""
        with self._commit:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                size = self._size(batch)
                self._db.execute("DELETE FROM entries WHERE id BETWEEN ? AND ?", (batch.first_id, batch.last_id))
                self._db.execute("DELETE FROM analysis WHERE first_id = ?", (batch.first_id,))
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback()
                raise SpoolError(f"cannot delete analysed entries from the spool {self.path}: {exc}") from exc
        with self._state:
            self._backlog_entries -= batch.entries
            self._backlog_rows -= batch.row_count
            self._backlog_bytes -= size

    def depth(self) -> SpoolDepth:
        """What waits, for ``/metrics``. Cheap: counters plus one indexed read; never waits on a commit."""
        with self._reader_lock:
            try:
                row = self._reader.execute(
                    "SELECT received_s FROM entries WHERE id > ? ORDER BY id LIMIT 1", (self._stored_upto,)
                ).fetchone()
            except sqlite3.Error:
                row = None
        with self._state:
            return SpoolDepth(
                entries=self._entries,
                rows=self._rows,
                bytes=self._bytes + self._backlog_bytes,
                max_bytes=self.max_bytes,
                oldest_age_s=max(time.time() - row[0], 0.0) if row else 0.0,
                backlog_entries=self._backlog_entries,
                backlog_rows=self._backlog_rows,
            )

    def close(self) -> None:
        """Close the file. Entries not yet stored stay in it for the next start."""
        with self._commit, self._reader_lock:
            self._reader.close()
            self._db.close()
