"""A span is stored once by (project, trace id, span id), however often it is sent: resent
requests, repeats inside one request, resends after a restart or a crash at any step."""

from __future__ import annotations

import json
import re
import sqlite3

from infersight.collector._counters import Counters
from infersight.collector._server import CollectorProcess
from infersight.collector.ingest import Decoder
from infersight.collector.ingest._otlp import JSON, day_range, parse_traces, span_keys, to_rows
from infersight.collector.spool import Entry, Spool, SpoolWriter
from infersight.collector.store import encode_rows
from tests import http
from tests.collector.otlp_bodies import genai_spans_json
from tests.collector.test_detections import LOOP, _detections_of, _output_body
from tests.collector.test_writer import drain, new_project, spooled, stored
from tests.conftest import free_port, wait_for

HEADERS = {"content-type": "application/json"}


def _metric(url: str, name: str) -> int:
    match = re.search(rf"^infersight_{name} (\d+)$", http.get(f"{url}/metrics").text, re.MULTILINE)
    return int(match.group(1)) if match else 0


def _settled(url: str, spans: int) -> dict:
    """The summary once the writer has taken ``spans`` acknowledged spans (stored or repeated)."""
    assert wait_for(lambda: _metric(url, "spans_stored_total") + _metric(url, "spans_repeated_total") >= spans)
    return http.get(f"{url}/api/v1/summary", params={"since": "1h"}).json()


def test_the_same_request_posted_three_times_is_stored_and_counted_once(collector):
    # A sender that never saw the 200 (timeout, restart, kill -9) sends the request again.
    body, _ = genai_spans_json(50)
    for _ in range(3):
        assert http.post(f"{collector.url}/v1/traces", content=body, headers=HEADERS).status_code == 200
    summary = _settled(collector.url, 150)
    assert (summary["spans"], summary["input_tokens"]) == (50, 500)
    assert _metric(collector.url, "spans_repeated_total") == 100


def test_a_span_twice_in_one_request_is_one_span(collector):
    body, span_ids = genai_spans_json(5)
    document = json.loads(body)
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans.extend(json.loads(json.dumps(spans)))  # every span again, in the same request
    response = http.post(f"{collector.url}/v1/traces", content=json.dumps(document), headers=HEADERS)
    assert response.status_code == 200
    assert "rejectedSpans" not in response.text  # accepted: it is one span, sent twice
    summary = _settled(collector.url, 5)
    assert summary["spans"] == len(span_ids) == 5


def test_a_request_resent_after_a_restart_is_stored_once(tmp_path):
    data_dir, body = tmp_path / "data", genai_spans_json(20)[0]
    repeated = []
    for _ in range(2):  # the second collector is a new writer on the same data dir
        process = CollectorProcess(data_dir, free_port(), extra_args=("--no-auth", "--decode-workers", "0")).start()
        try:
            assert http.post(f"{process.url}/v1/traces", content=body, headers=HEADERS).status_code == 200
            summary = _settled(process.url, 20)
            repeated.append(_metric(process.url, "spans_repeated_total"))
        finally:
            process.stop()
    assert (summary["spans"], summary["input_tokens"]) == (20, 200)
    assert repeated == [0, 20]


def test_repeats_across_requests_and_batches_leave_every_table_single(store, tmp_path):
    project = new_project()
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    rows = to_rows(parse_traces(genai_spans_json(4)[0], JSON), project)
    for _ in range(3):  # three copies in one batch ...
        spool.append(Entry.compress(project, encode_rows(rows), 4, days=day_range(rows), keys=span_keys(rows)))
    counters = drain(spool, store)
    spool.append(Entry.compress(project, encode_rows(rows), 4, days=day_range(rows), keys=span_keys(rows)))
    drain(spool, store, counters)  # ... and one more in a later batch
    raw, typed = stored(store, project)
    assert raw == typed == {row["SpanId"]: 1 for row in rows}
    (hourly,) = store.query("SELECT sum(requests) AS n, sum(input_tokens) AS t FROM llm_hourly"
                            " WHERE project = {p:String}", {"p": project})
    assert (int(hourly["n"]), int(hourly["t"])) == (4, 40)
    assert (counters.get("spans_stored"), counters.get("spans_repeated")) == (4, 12)


def test_the_same_span_ids_in_another_project_are_another_span(store, tmp_path):
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    body = genai_spans_json(3)[0]
    projects = [new_project(), new_project()]
    for project in projects:
        rows = to_rows(parse_traces(body, JSON), project)
        spool.append(Entry.compress(project, encode_rows(rows), 3, days=day_range(rows), keys=span_keys(rows)))
    drain(spool, store)
    assert [len(stored(store, p)[0]) for p in projects] == [3, 3]


def test_a_resend_after_a_writer_restart_is_stored_once(store, tmp_path):
    project, path = new_project(), tmp_path / "spool.db"
    spool = Spool(path, max_bytes=1 << 30)
    rows = to_rows(parse_traces(genai_spans_json(6)[0], JSON), project)
    entry = Entry.compress(project, encode_rows(rows), 6, days=day_range(rows), keys=span_keys(rows))
    spool.append(entry)
    drain(spool, store)
    spool.close()
    spool = Spool(path, max_bytes=1 << 30)  # a new writer on the same data dir
    spool.append(entry)
    counters = drain(spool, store)
    assert counters.get("spans_repeated") == 6
    assert stored(store, project)[0] == {row["SpanId"]: 1 for row in rows}


def test_a_retry_after_a_partial_insert_stores_the_rest(store, tmp_path):
    # One insert writes one part per day, and a crash can come between two of them: the landed
    # day carries the batch's token. The retry must store the other day's spans, not have
    # ClickHouse drop them as a repeat of that token.
    project, path = new_project(), tmp_path / "spool.db"
    spool = Spool(path, max_bytes=1 << 30)
    ids = spooled(spool, project, 4, day_offsets=[0, 0, 1, 1])
    batch = spool.decide(spool.next_batch(max_rows=1000, max_bytes=1 << 30), set())  # as the writer does
    today = b"".join(line + b"\n" for line in batch.rows.splitlines()[:2])
    store.insert("otel_traces", today, dedup_token=batch.dedup_token)
    spool.close()  # killed between the two parts

    spool = Spool(path, max_bytes=1 << 30)
    drain(spool, store)
    raw, typed = stored(store, project)
    assert raw == typed == {span_id: 1 for span_id in ids}


def test_detections_are_stored_once_across_a_crash_between_the_inserts_and_a_resend(store, tmp_path):
    project, path = f"{new_project()}-det", tmp_path / "spool.db"
    decoder = Decoder(0, limit_bytes=1 << 20)
    spool = Spool(path, max_bytes=1 << 30)
    rows = to_rows(parse_traces(_output_body(LOOP, spans=3)[0], JSON), project)
    entry = Entry.compress(project, encode_rows(rows), 3, days=day_range(rows), keys=span_keys(rows))
    spool.append(entry)
    batch = spool.decide(spool.next_batch(max_rows=100, max_bytes=1 << 30), set())  # as the writer does
    store.insert("otel_traces", batch.rows, dedup_token=batch.dedup_token)
    spool.close()  # killed after the spans' insert, before the detections'
    assert _detections_of(store, project) == []

    spool = Spool(path, max_bytes=1 << 30)
    spool.append(entry)  # and the sender, never answered, sends the request again
    counters = Counters()
    writer = SpoolWriter(spool, store, counters, detect=decoder.detect, min_interval_s=0.0)
    writer.start()
    try:
        assert wait_for(lambda: spool.depth().entries == spool.depth().backlog_entries == 0)
    finally:
        writer.stop()
    found = _detections_of(store, project)
    assert {span_id for span_id, _ in found} == {row["SpanId"] for row in rows}
    assert len(found) == len(set(found)) == counters.get("detections")
    # the retried batch is inserted again (ClickHouse drops it), the resend is left out
    assert counters.get("spans_stored") == 3 and counters.get("spans_repeated") == 3


def test_entries_of_an_older_collector_drain_and_count_once(store, tmp_path):
    project = new_project()
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    first = spooled(spool, project, 3, legacy=True)
    drain(spool, store)
    assert stored(store, project)[0] == {span_id: 1 for span_id in first}


def test_a_spool_file_of_an_older_collector_opens_and_drains(store, tmp_path):
    # The schema before entries kept their spans' keys and raw size, with one entry in it.
    project, path = new_project(), tmp_path / "spool.db"
    rows = to_rows(parse_traces(genai_spans_json(2)[0], JSON), project)
    old = Entry.compress(project, encode_rows(rows), 2, days=day_range(rows))
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE entries (id INTEGER PRIMARY KEY AUTOINCREMENT, received_s REAL NOT NULL,"
        " project TEXT NOT NULL, row_count INTEGER NOT NULL, body BLOB NOT NULL,"
        " detections BLOB NOT NULL DEFAULT x'', first_day INTEGER, last_day INTEGER);"
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    )
    db.execute("INSERT INTO entries (received_s, project, row_count, body, first_day, last_day)"
               " VALUES (1.0, ?, 2, ?, ?, ?)", (project, old.rows_z, *day_range(rows)))
    db.commit()
    db.close()
    spool = Spool(path, max_bytes=1 << 30)
    spool.append(Entry.compress(project, encode_rows(rows), 2, days=day_range(rows), keys=span_keys(rows)))
    counters = drain(spool, store)
    assert (counters.get("spans_stored"), counters.get("spans_repeated")) == (2, 2)
    assert stored(store, project)[0] == {row["SpanId"]: 1 for row in rows}
