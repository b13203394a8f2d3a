"""Spool and writer against the real embedded store: outages, crashes and exactly-once."""

from __future__ import annotations

import itertools
import json

from fastapi.testclient import TestClient

from infersight.collector import Settings, create_app
from infersight.collector._metrics import Counters
from infersight.collector._otlp import JSON, parse_traces, to_rows
from infersight.collector._spool import Entry, Spool
from infersight.collector._store import encode_rows
from infersight.collector._writer import SpoolWriter
from tests.collector.otlp_bodies import genai_spans_json
from tests.conftest import wait_for

_projects = itertools.count()


def new_project() -> str:
    return f"writer-test-{next(_projects)}"


def spooled(spool: Spool, project: str, spans: int) -> list[str]:
    """Append one request of ``spans`` spans for ``project``; returns their span ids."""
    body, span_ids = genai_spans_json(spans)
    spool.append(Entry.compress(project, encode_rows(to_rows(parse_traces(body, JSON), project)), spans))
    return span_ids


def stored(store, project: str) -> tuple[dict[str, int], dict[str, int]]:
    """Span id -> how many rows, in otel_traces and in llm_spans, for ``project``."""
    raw = store.query(
        "SELECT SpanId AS id, count() AS n FROM otel_traces"
        " WHERE ResourceAttributes['infersight.project'] = {p:String} GROUP BY SpanId",
        {"p": project},
    )
    typed = store.query(
        "SELECT span_id AS id, count() AS n FROM llm_spans WHERE project = {p:String} GROUP BY span_id",
        {"p": project},
    )
    return {r["id"]: int(r["n"]) for r in raw}, {r["id"]: int(r["n"]) for r in typed}


def drain(spool: Spool, store, counters: Counters | None = None) -> Counters:
    counters = counters or Counters()
    writer = SpoolWriter(spool, store, counters, min_interval_s=0.0, retry_s=(0.05, 0.2))
    writer.start()
    try:
        assert wait_for(lambda: spool.depth().entries == 0), spool.depth()
    finally:
        writer.stop()
    return counters


def test_writer_merges_requests_into_few_inserts_and_stores_each_span_once(store, tmp_path, monkeypatch):
    project = new_project()
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    expected = [i for _ in range(40) for i in spooled(spool, project, 5)]
    tokens: list[str] = []
    insert = store.insert

    def counting_insert(table: str, rows: bytes, *, dedup_token: str | None = None) -> None:
        tokens.append(dedup_token)
        insert(table, rows, dedup_token=dedup_token)

    monkeypatch.setattr(store, "insert", counting_insert)
    counters = drain(spool, store)
    assert len(tokens) == 1  # 40 requests, 200 rows: one batch
    raw, typed = stored(store, project)
    assert raw == typed == {span_id: 1 for span_id in expected}
    assert counters.get("spans_stored") == 200


def test_a_batch_stored_just_before_a_crash_is_not_stored_twice(store, tmp_path):
    project = new_project()
    path = tmp_path / "spool.db"
    spool = Spool(path, max_bytes=1 << 30)
    first = spooled(spool, project, 3) + spooled(spool, project, 3)
    batch = spool.next_batch(max_rows=1000, max_bytes=1 << 30)
    store.insert("otel_traces", batch.rows, dedup_token=batch.dedup_token)
    spool.close()  # killed after the insert, before done(): the spool still holds the batch

    spool = Spool(path, max_bytes=1 << 30)
    later = spooled(spool, project, 2)
    counters = drain(spool, store)
    assert counters.get("spans_stored") == 8  # the writer did send the old batch again...
    raw, typed = stored(store, project)
    assert raw == typed == {span_id: 1 for span_id in first + later}  # ...and it was dropped


def test_without_the_token_the_same_retry_would_double_both_tables(store, tmp_path):
    # The control for the test above: it is the token, not luck, that keeps rows single.
    project = new_project()
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    spooled(spool, project, 3)
    batch = spool.next_batch(max_rows=1000, max_bytes=1 << 30)
    store.insert("otel_traces", batch.rows, dedup_token=batch.dedup_token)
    store.insert("otel_traces", batch.rows, dedup_token=batch.dedup_token + "0")
    raw, typed = stored(store, project)
    assert set(raw.values()) == set(typed.values()) == {2}


def test_an_outage_keeps_spans_in_the_spool_and_the_writer_catches_up(store, tmp_path):
    project = new_project()
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    counters = Counters()
    writer = SpoolWriter(spool, store, counters, min_interval_s=0.0, retry_s=(0.05, 0.2))
    store.failing = True
    writer.start()
    try:
        expected = [i for _ in range(10) for i in spooled(spool, project, 4)]
        writer.wake()
        assert wait_for(lambda: counters.get("store_errors") >= 3)
        assert spool.depth().rows == 40
        store.failing = False
        assert wait_for(lambda: spool.depth().entries == 0)
    finally:
        writer.stop()
    raw, typed = stored(store, project)
    assert raw == typed == {span_id: 1 for span_id in expected}


def test_stopping_during_an_outage_leaves_the_spool_for_the_next_start(store, tmp_path):
    project = new_project()
    path = tmp_path / "spool.db"
    spool = Spool(path, max_bytes=1 << 30)
    expected = spooled(spool, project, 3)
    store.failing = True
    writer = SpoolWriter(spool, store, Counters(), retry_s=(0.05, 0.2))
    writer.start()
    writer.stop(drain_s=0.5)
    spool.close()
    assert stored(store, project) == ({}, {})

    store.failing = False
    drain(Spool(path, max_bytes=1 << 30), store)
    assert stored(store, project)[1] == {span_id: 1 for span_id in expected}


def test_full_spool_answers_503_with_retry_after_and_recovers(store, tmp_path):
    project = new_project()
    settings = Settings(data_dir=tmp_path, auth=False, project=project, spool_max_bytes=6000)
    store.failing = True
    acked: list[str] = []
    with TestClient(create_app(settings, store=store)) as client:
        for _ in range(200):
            body, span_ids = genai_spans_json(5)
            response = client.post("/v1/traces", content=body, headers={"content-type": JSON})
            if response.status_code != 200:
                break
            acked += span_ids
        assert response.status_code == 503
        assert response.headers["retry-after"] == "5"
        status = json.loads(response.text)
        assert status["code"] == 14 and "limit is 6000" in status["message"]
        assert 0 < len(acked) < 1000

        metrics = client.get("/metrics").text
        assert "infersight_spans_refused_total 5\n" in metrics
        assert f"infersight_spool_rows {len(acked)}\n" in metrics
        assert "infersight_spans_stored_total 0\n" in metrics
        assert "infersight_store_errors_total 0\n" not in metrics

        store.failing = False
        assert wait_for(lambda: "infersight_spool_entries 0\n" in client.get("/metrics").text)
        after, span_ids = genai_spans_json(5)
        assert client.post("/v1/traces", content=after, headers={"content-type": JSON}).status_code == 200
        assert wait_for(lambda: client.get("/api/v1/summary").json()["spans"] == len(acked) + 5)
        assert f"infersight_spans_stored_total {len(acked) + 5}\n" in client.get("/metrics").text
    raw, typed = stored(store, project)
    assert raw == typed == {span_id: 1 for span_id in acked + span_ids}


def test_timestamps_clickhouse_cannot_store_are_rejected_not_stuck(store, tmp_path):
    # Once acknowledged, a row the store rejects would block the spool behind it forever, so
    # such spans are left out at the door (and reported to the exporter as partial_success).
    body, span_ids = genai_spans_json(4)
    document = json.loads(body)
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[0]["startTimeUnixNano"] = spans[0]["endTimeUnixNano"] = "0"
    spans[1]["endTimeUnixNano"] = "5"
    spans[2]["startTimeUnixNano"] = spans[2]["endTimeUnixNano"] = str(2**64 - 1)
    rejected: list[str] = []
    rows = to_rows(parse_traces(json.dumps(document).encode(), JSON), new_project(), rejected)
    assert [r["SpanId"] for r in rows] == [span_ids[3]]
    assert len(rejected) == 3
    assert "start/end time must be set" in rejected[0] and "before start" in rejected[1]
