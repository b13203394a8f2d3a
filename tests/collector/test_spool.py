"""The spool on its own: durable FIFO, stable batches across restarts, size limit, concurrency."""

from __future__ import annotations

import json
import re
import secrets
import threading

import pytest

from infersight.collector.errors import SpoolFull
from infersight.collector.spool import Entry, Spool
from infersight.collector.store import encode_rows


def rows(n: int, tag: str = "x") -> bytes:
    return encode_rows({"SpanId": f"{tag}-{i}"} for i in range(n))


def entry(project: str, body: bytes, count: int, days: tuple[int, int] | None = (20_000, 20_000)) -> Entry:
    return Entry.compress(project, body, count, days=days)


def test_attributes_added_to_an_entry_reach_its_rows_and_nothing_else(tmp_path):
    body = encode_rows({"SpanId": f"s{i}", "SpanAttributes": {"k": str(i)}} for i in range(3))
    marked = entry("p", body, 3).with_attributes({1: {"infersight.same_call_as": "s0"}})
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 20)
    spool.append(marked)
    batch = spool.next_batch(max_rows=10, max_bytes=1 << 20)
    assert [row["SpanAttributes"] for row in map(json.loads, batch.rows.splitlines())] == [
        {"k": "0"}, {"k": "1", "infersight.same_call_as": "s0"}, {"k": "2"}]
    assert marked.raw_bytes == len(batch.rows)


def test_batches_merge_entries_in_order_up_to_the_row_limit(tmp_path):
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 20)
    ids = [spool.append(entry("p", rows(3, str(i)), 3)) for i in range(5)]
    assert ids == sorted(ids)

    batch = spool.next_batch(max_rows=7, max_bytes=1 << 20)
    assert (batch.first_id, batch.last_id, batch.entries, batch.row_count) == (ids[0], ids[1], 2, 6)
    assert batch.rows == rows(3, "0") + rows(3, "1")
    assert re.fullmatch(r"[0-9a-f]{48}", batch.dedup_token)
    spool.done(batch)

    rest = spool.next_batch(max_rows=100, max_bytes=1 << 20)
    assert (rest.first_id, rest.last_id, rest.row_count) == (ids[2], ids[4], 9)
    spool.done(rest)
    assert spool.next_batch(max_rows=100, max_bytes=1 << 20) is None
    assert spool.depth().entries == spool.depth().rows == spool.depth().bytes == 0


def test_a_batch_never_spans_more_days_than_one_insert_may_touch(tmp_path):
    # ClickHouse refuses an insert into more than 100 daily partitions; the spool keeps each
    # batch within 100 consecutive days, and an entry whose days are unknown (written by an
    # older collector) goes alone.
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 20)
    ids = [
        spool.append(entry("p", rows(1, "a"), 1, days=(20_000, 20_040))),
        spool.append(entry("p", rows(1, "b"), 1, days=(20_050, 20_099))),
        spool.append(entry("p", rows(1, "c"), 1, days=(20_090, 20_100))),  # day 101 of the batch
        spool.append(entry("p", rows(1, "d"), 1, days=None)),
        spool.append(entry("p", rows(1, "e"), 1, days=(19_000, 19_150))),  # alone: too wide itself
    ]
    spans = []
    while (batch := spool.next_batch(max_rows=100, max_bytes=1 << 20)) is not None:
        spans.append((batch.first_id, batch.last_id))
        spool.done(batch)
    assert spans == [(ids[0], ids[1]), (ids[2], ids[2]), (ids[3], ids[3]), (ids[4], ids[4])]


def test_split_claims_the_first_half_and_the_rest_follows(tmp_path):
    path = tmp_path / "spool.db"
    spool = Spool(path, max_bytes=1 << 20)
    ids = [spool.append(entry("p", rows(1, str(i)), 1)) for i in range(5)]
    batch = spool.next_batch(max_rows=100, max_bytes=1 << 20)
    spool.split(batch)
    spool.close()  # the claim of the half is durable: a restart retries the half, same token

    spool = Spool(path, max_bytes=1 << 20)
    half = spool.next_batch(max_rows=100, max_bytes=1 << 20)
    assert (half.first_id, half.last_id) == (ids[0], ids[1]) and half.dedup_token != batch.dedup_token
    assert spool.next_batch(max_rows=100, max_bytes=1 << 20) == half
    spool.done(half)
    rest = spool.next_batch(max_rows=100, max_bytes=1 << 20)
    assert (rest.first_id, rest.last_id, rest.projects) == (ids[2], ids[4], ("p",))
    spool.done(rest)
    spool.append(entry("p", rows(1), 1))
    with pytest.raises(ValueError):
        spool.split(spool.next_batch(max_rows=100, max_bytes=1 << 20))


def test_an_entry_larger_than_the_row_limit_is_a_batch_of_its_own(tmp_path):
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 20)
    spool.append(entry("p", rows(50), 50))
    spool.append(entry("p", rows(1), 1))
    assert spool.next_batch(max_rows=10, max_bytes=1 << 20).row_count == 50


def test_the_same_batch_comes_back_until_done_also_after_a_restart(tmp_path):
    path = tmp_path / "spool.db"
    spool = Spool(path, max_bytes=1 << 20)
    spool.append(entry("p", rows(2, "a"), 2))
    first = spool.next_batch(max_rows=100, max_bytes=1 << 20)
    spool.append(entry("p", rows(2, "b"), 2))  # arrives while the first batch is being inserted
    assert spool.next_batch(max_rows=100, max_bytes=1 << 20) == first
    spool.close()  # a crash before done(): the batch may or may not be in the store

    spool = Spool(path, max_bytes=1 << 20)
    assert spool.depth().entries == 2
    again = spool.next_batch(max_rows=100, max_bytes=1 << 20)
    assert again == first  # same entries, same token: the store can drop it as a repeat
    spool.done(again)
    assert spool.next_batch(max_rows=100, max_bytes=1 << 20).rows == rows(2, "b")


def test_tokens_are_never_reused_even_when_the_spool_empties(tmp_path):
    path = tmp_path / "spool.db"
    spool = Spool(path, max_bytes=1 << 20)
    spool.append(entry("p", rows(1), 1))
    batch = spool.next_batch(max_rows=10, max_bytes=1 << 20)
    spool.done(batch)
    spool.close()
    spool = Spool(path, max_bytes=1 << 20)
    spool.append(entry("p", rows(1), 1))
    later = spool.next_batch(max_rows=10, max_bytes=1 << 20)
    assert later.first_id > batch.last_id
    assert later.dedup_token != batch.dedup_token
    # A new spool file (say the old one was deleted) starts its ids again, but not its tokens.
    other = Spool(tmp_path / "other.db", max_bytes=1 << 20)
    other.append(entry("p", rows(1), 1))
    assert other.next_batch(max_rows=10, max_bytes=1 << 20).dedup_token[:16] != batch.dedup_token[:16]


def test_full_spool_refuses_until_entries_are_done(tmp_path):
    spool = Spool(tmp_path / "spool.db", max_bytes=4000)
    small = [encode_rows([{"r": secrets.token_hex(100)}]) for _ in range(100)]
    with pytest.raises(SpoolFull, match="limit is 4000"):
        for body in small:
            spool.append(entry("p", body, 1))
    assert 3500 < spool.depth().bytes <= 4000
    spool.done(spool.next_batch(max_rows=10_000, max_bytes=1 << 30))
    spool.append(entry("p", small[0], 1))


def test_an_empty_spool_takes_an_entry_above_the_limit(tmp_path):
    # Otherwise a request larger than the limit could never be accepted, however long it waits.
    spool = Spool(tmp_path / "spool.db", max_bytes=1000)
    spool.append(entry("p", encode_rows([{"r": secrets.token_hex(2000)}]), 1))
    assert spool.depth().bytes > 1000
    with pytest.raises(SpoolFull):
        spool.append(entry("p", rows(1), 1))


def test_depth_counts_what_waits_and_survives_a_restart(tmp_path):
    path = tmp_path / "spool.db"
    spool = Spool(path, max_bytes=1 << 20)
    assert spool.depth().oldest_age_s == 0.0
    spool.append(entry("a", rows(4), 4))
    spool.append(entry("b", rows(6), 6))
    depth = spool.depth()
    assert (depth.entries, depth.rows, depth.max_bytes) == (2, 10, 1 << 20)
    assert 0 < depth.bytes < len(rows(4)) + len(rows(6))  # stored compressed
    assert 0 <= depth.oldest_age_s < 5
    spool.close()
    assert Spool(path, max_bytes=1 << 20).depth().entries == 2


def test_concurrent_appends_all_commit_with_distinct_ids(tmp_path):
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    ids: list[int] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        for i in range(25):
            entry_id = spool.append(entry("p", rows(2, f"{n}-{i}"), 2))
            with lock:
                ids.append(entry_id)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 400
    assert (spool.depth().entries, spool.depth().rows) == (400, 800)
    batch = spool.next_batch(max_rows=10_000, max_bytes=1 << 30)
    assert batch.entries == 400 and batch.rows.count(b"\n") == 800


def test_batches_are_capped_by_raw_bytes_not_by_what_compression_leaves(tmp_path):
    # 1 MiB of rows that LZ4 stores in a few KiB each: by stored size all of them would fit one
    # batch of 1 MiB; by raw size, one entry per batch.
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    big = encode_rows([{"SpanId": "a", "text": "x" * (1 << 20)}])
    ids = [spool.append(entry("p", big, 1)) for _ in range(3)]
    assert spool.depth().bytes < 3 * (1 << 20) // 50
    batch = spool.next_batch(max_rows=100, max_bytes=1 << 20)
    assert (batch.first_id, batch.last_id) == (ids[0], ids[0])


def test_a_span_twice_in_a_batch_is_in_it_once(tmp_path):
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    keys = [("1700000000.000000000", "ab" * 16, "cd" * 8), ("1700000000.000000001", "ab" * 16, "ef" * 8)]
    for _ in range(2):
        spool.append(Entry.compress("p", rows(2), 2, days=(20_000, 20_000), keys=keys))
    batch = spool.next_batch(max_rows=100, max_bytes=1 << 30)
    assert (batch.entries, batch.row_count, batch.rows) == (2, 4, rows(2))
    assert batch.keys == (("p", "ab" * 16, "cd" * 8), ("p", "ab" * 16, "ef" * 8))
    assert batch.times == (1_700_000_000 * 10**9, 1_700_000_000 * 10**9 + 1)  # each kept span's start


def keyed(project: str, spans: list[str]) -> Entry:
    body = encode_rows({"SpanId": span} for span in spans)
    keys = [(f"1700000000.00000000{i}", "ab" * 16, span) for i, span in enumerate(spans)]
    return Entry.compress(project, body, len(spans), days=(19_675, 19_675), keys=keys)


def test_a_stored_batch_waits_for_its_analysis_as_it_was_inserted_across_a_restart(tmp_path):
    path = tmp_path / "spool.db"
    spool = Spool(path, max_bytes=1 << 20)
    spool.append(keyed("p", ["s1", "s2"]))
    spool.append(keyed("p", ["s3"]))
    batch = spool.next_batch(max_rows=100, max_bytes=1 << 20)
    inserted = spool.decide(batch, {("p", "ab" * 16, "s2")})  # the store held s2 already
    spool.done(batch, analyse=True)
    assert spool.next_batch(max_rows=100, max_bytes=1 << 20) is None  # stored: never inserted again
    depth = spool.depth()
    assert (depth.entries, depth.rows, depth.backlog_entries, depth.backlog_rows) == (0, 0, 2, 3)
    assert depth.bytes > 0 and depth.oldest_age_s == 0.0
    spool.append(keyed("p", ["s4"]))  # ingest goes on behind the backlog
    spool.close()

    spool = Spool(path, max_bytes=1 << 20)
    pending = spool.next_analysis()
    assert (pending.rows, pending.dedup_token) == (inserted.rows, inserted.dedup_token)  # what went in
    assert spool.next_analysis() == pending  # the same until analysed
    later = spool.next_batch(max_rows=100, max_bytes=1 << 20)
    assert later.rows == encode_rows([{"SpanId": "s4"}])
    spool.done(later, analyse=True)
    spool.analysed(pending)
    assert spool.next_analysis().rows == later.rows
    spool.analysed(spool.next_analysis())
    assert spool.next_analysis() is None
    assert spool.depth() == type(spool.depth())(0, 0, 0, 1 << 20, 0.0, 0, 0)
