"""Spool and writer against the real embedded store: outages, crashes and exactly-once."""

from __future__ import annotations

import itertools
import json

from fastapi.testclient import TestClient

from infersight.collector import Settings, create_app
from infersight.collector._counters import Counters
from infersight.collector.ingest._otlp import JSON, day_range, parse_traces, span_keys, to_rows
from infersight.collector.spool import Entry, Spool, SpoolWriter
from infersight.collector.store import encode_rows
from infersight.collector.web import ProjectKeys
from tests.collector.otlp_bodies import genai_spans_json
from tests.conftest import wait_for

_projects = itertools.count()


def new_project() -> str:
    return f"writer-test-{next(_projects)}"


def spooled(
    spool: Spool, project: str, spans: int, *, day_offsets: list[int] | None = None, legacy: bool = False
) -> list[str]:
    """Append one request of ``spans`` spans for ``project``; returns their span ids.

    ``day_offsets``: move span ``i`` that many days into the past, with the entry's days set
    accordingly (as the decoder does; it would reject most such spans at the door). ``legacy``:
    an entry as an older collector wrote it, without its spans' keys.
    """
    body, span_ids = genai_spans_json(spans)
    rows = to_rows(parse_traces(body, JSON), project)
    for row, days in zip(rows, day_offsets or [], strict=False):
        seconds = int(row["Timestamp"][:-10]) - days * 86_400
        row["Timestamp"] = f"{seconds:010d}{row['Timestamp'][-10:]}"
    keys = None if legacy else span_keys(rows)
    spool.append(Entry.compress(project, encode_rows(rows), spans, days=day_range(rows), keys=keys))
    return span_ids


def dead_letters(store, project: str) -> list[dict]:
    return store.query(
        "SELECT spans, reason, rows FROM dead_letters WHERE project = {p:String} ORDER BY received",
        {"p": project},
    )


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


def recorded_inserts(store, monkeypatch) -> list[str]:
    """The tables of the store's inserts from now on, in order (the inserts still happen)."""
    tables: list[str] = []
    insert = store.insert

    def recording_insert(table: str, rows: bytes, *, dedup_token: str | None = None) -> None:
        tables.append(table)
        insert(table, rows, dedup_token=dedup_token)

    monkeypatch.setattr(store, "insert", recording_insert)
    return tables


def drain(spool: Spool, store, counters: Counters | None = None) -> Counters:
    counters = counters or Counters()
    writer = SpoolWriter(spool, store, counters, min_interval_s=0.0, retry_s=(0.05, 0.2))
    writer.start()
    try:
        assert wait_for(lambda: spool.depth().entries == spool.depth().backlog_entries == 0), spool.depth()
    finally:
        writer.stop()
    return counters


def test_writer_merges_requests_into_few_inserts_and_stores_each_span_once(store, tmp_path, monkeypatch):
    project = new_project()
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    expected = [i for _ in range(40) for i in spooled(spool, project, 5)]
    inserts = recorded_inserts(store, monkeypatch)
    counters = drain(spool, store)
    assert inserts == ["otel_traces"]  # 40 requests, 200 rows: one batch
    raw, typed = stored(store, project)
    assert raw == typed == {span_id: 1 for span_id in expected}
    assert counters.get("spans_stored") == 200


def test_under_load_the_next_batch_fills_instead_of_inserting_each_request(store, tmp_path, monkeypatch):
    # A batch of a tenth of max_rows or more is a load: the requests that follow wait for half a
    # batch (here 50 rows) rather than each going in alone as it arrives.
    project = new_project()
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    inserts = recorded_inserts(store, monkeypatch)
    writer = SpoolWriter(spool, store, Counters(), max_rows=100, min_interval_s=0.0, fill_s=600.0)
    first = spooled(spool, project, 20)
    writer.start()
    try:
        assert wait_for(lambda: set(stored(store, project)[0]) == set(first))
        later = [i for _ in range(3) for i in spooled(spool, project, 5)]
        writer.wake()
        later += spooled(spool, project, 40)
        writer.wake()
        assert wait_for(lambda: len(stored(store, project)[0]) == 75)
    finally:
        writer.stop()
    assert inserts == ["otel_traces", "otel_traces"]
    assert set(stored(store, project)[0]) == set(first + later)


def test_a_batch_stored_just_before_a_crash_is_not_stored_twice(store, tmp_path):
    project = new_project()
    path = tmp_path / "spool.db"
    spool = Spool(path, max_bytes=1 << 30)
    first = spooled(spool, project, 3) + spooled(spool, project, 3)
    batch = spool.decide(spool.next_batch(max_rows=1000, max_bytes=1 << 30), set())  # as the writer does
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
        assert wait_for(lambda: spool.depth().entries == spool.depth().backlog_entries == 0)
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
    settings = Settings(data_dir=tmp_path, auth=False, project=project, spool_max_bytes=6000, decode_workers=0)
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
        # The counter moves just after the rows are visible (once the spool has forgotten them).
        assert wait_for(lambda: f"infersight_spans_stored_total {len(acked) + 5}\n" in client.get("/metrics").text)
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


def test_a_request_the_store_refuses_is_set_aside_and_everyone_elses_spans_are_stored(store, tmp_path):
    # Two poisons among good requests of other projects: rows over 101 days, which ClickHouse
    # refuses at commit (chDB's streaming insert does not even say so), and a row it cannot
    # parse. Neither may take a good span with it, nor hold the spool.
    good, wide, broken = new_project(), new_project(), new_project()
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    expected = spooled(spool, good, 3)
    spooled(spool, wide, 101, day_offsets=list(range(101)))
    expected += spooled(spool, good, 4)
    garbage = encode_rows([{"Timestamp": "not a time", "SpanId": "ab"}])
    spool.append(Entry.compress(broken, garbage, 1, days=day_range([{"Timestamp": "1700000000.000000000"}])))
    expected += spooled(spool, good, 5)

    counters = drain(spool, store)
    raw, typed = stored(store, good)
    assert raw == typed == {span_id: 1 for span_id in expected}
    assert stored(store, wide) == stored(store, broken) == ({}, {})
    (wide_letter,) = dead_letters(store, wide)
    assert wide_letter["spans"] == 101 and "partitions" in wide_letter["reason"]
    assert wide_letter["rows"].count("\n") == 101  # kept whole, ready to re-insert
    (broken_letter,) = dead_letters(store, broken)
    assert broken_letter["spans"] == 1 and "CANNOT_PARSE" in broken_letter["reason"]
    assert counters.get("spans_dead_lettered") == 102
    assert counters.get("spans_stored") == 12
    assert dead_letters(store, good) == []

    # The project's owner sees it on the API and the Overview; nobody else does.
    for project, spans in ((wide, 101), (good, 0)):
        settings = Settings(data_dir=tmp_path / project, auth=False, project=project, alerts=False, decode_workers=0)
        with TestClient(create_app(settings, store=store)) as client:
            assert client.get("/api/v1/summary").json()["dead_letters"]["spans"] == spans
            overview = client.get("/").text
        assert ('id="dead-letters"' in overview) == bool(spans)
        if spans:
            assert "101 acknowledged spans (1 requests) were refused" in overview and "partitions" in overview


def test_dead_letters_are_replayed_once_their_cause_is_gone(store, tmp_path):
    # The request of 101 days was refused whole by an older writer; the replay inserts it in
    # inserts of at most 100 days. A row the store cannot parse is refused again and stays.
    wide, broken = new_project(), new_project()
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    spooled(spool, wide, 101, day_offsets=list(range(101)))
    garbage = encode_rows([{"Timestamp": "not a time", "SpanId": "ab"}])
    spool.append(Entry.compress(broken, garbage, 1, days=day_range([{"Timestamp": "1700000000.000000000"}])))
    drain(spool, store)
    assert len(dead_letters(store, wide)) == len(dead_letters(store, broken)) == 1

    for project in (wide, broken):
        settings = Settings(data_dir=tmp_path / project, auth=False, project=project, alerts=False, decode_workers=0)
        with TestClient(create_app(settings, store=store)) as client:
            (pending,) = client.get("/api/v1/dead_letters").json()["dead_letters"]
            first = client.post("/api/v1/dead_letters/replay").json()
            again = client.post("/api/v1/dead_letters/replay").json()
            left = client.get("/api/v1/summary").json()["dead_letters"]["spans"]
            overview = client.get("/").text
        if project == wide:
            assert pending["spans"] == 101
            assert (first["replayed_requests"], first["replayed_spans"], first["refused"]) == (1, 101, [])
            assert again == {"replayed_requests": 0, "replayed_spans": 0, "refused": []}
            raw, typed = stored(store, wide)
            assert len(raw) == 101 and set(raw.values()) == set(typed.values()) == {1}  # each once
            assert left == 0 and 'id="dead-letters"' not in overview
        else:
            assert first["replayed_requests"] == 0 and "CANNOT_PARSE" in first["refused"][0]
            assert again["refused"] and left == 1 and 'id="dead-letters"' in overview


def test_the_writer_splits_old_spans_into_inserts_of_at_most_100_days(store, tmp_path, monkeypatch):
    project = new_project()
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    expected = [
        i for offset in (0, 60, 120) for i in spooled(spool, project, 50, day_offsets=[offset + d for d in range(50)])
    ]
    inserts = recorded_inserts(store, monkeypatch)
    counters = drain(spool, store)
    assert stored(store, project)[0] == {span_id: 1 for span_id in expected}
    assert inserts.count("otel_traces") == 3 and "dead_letters" not in inserts
    assert counters.get("store_errors") == 0


def test_an_outage_never_sends_spans_to_dead_letters(store, tmp_path):
    # While the store cannot be reached, every insert fails; none of that is the rows' fault.
    project = new_project()
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    counters = Counters()
    writer = SpoolWriter(spool, store, counters, min_interval_s=0.0, retry_s=(0.01, 0.02))
    expected = [i for _ in range(4) for i in spooled(spool, project, 2)]
    store.failing = True
    writer.start()
    try:
        assert wait_for(lambda: counters.get("store_errors") >= 20)
        store.failing = False
        assert wait_for(lambda: spool.depth().entries == spool.depth().backlog_entries == 0)
    finally:
        writer.stop()
    assert stored(store, project)[0] == {span_id: 1 for span_id in expected}
    assert counters.get("spans_dead_lettered") == 0 and dead_letters(store, project) == []


def test_spans_outside_the_ingest_window_are_rejected_and_nobody_loses_a_span(store, tmp_path):
    # The reported attack, over HTTP: one project sends a span for each of the last 101 days
    # while another sends ordinary requests. The old days are refused one by one (OTLP
    # partial_success, before the ack); every acknowledged span of both projects is stored.
    hostile, other = new_project(), new_project()
    acked: dict[str, list[str]] = {hostile: [], other: []}
    keys = ProjectKeys(tmp_path)
    headers = {p: {"content-type": JSON, "authorization": f"Bearer {keys.create(p)[0]}"} for p in acked}
    keys.close()
    settings = Settings(data_dir=tmp_path, decode_workers=0, alerts=False)
    with TestClient(create_app(settings, store=store)) as client:
        for project in (other, hostile, other):
            body, span_ids = genai_spans_json(101)
            if project == hostile:
                document = json.loads(body)
                for day, span in enumerate(document["resourceSpans"][0]["scopeSpans"][0]["spans"]):
                    for key in ("startTimeUnixNano", "endTimeUnixNano"):
                        span[key] = str(int(span[key]) - day * 86_400 * 10**9)
                body = json.dumps(document).encode()
            response = client.post("/v1/traces", content=body, headers=headers[project])
            assert response.status_code == 200
            partial = response.json().get("partialSuccess", {})
            if project == hostile:
                assert partial["rejectedSpans"] == "71"  # 30 days ago (to the nanosecond) and older
                assert "days ago; spans of the last 30 days are stored" in partial["errorMessage"]
                span_ids = span_ids[:30]
            else:
                assert partial == {}
            acked[project] += span_ids
        spool = client.app.state.spool
        assert wait_for(lambda: spool.depth().entries == spool.depth().backlog_entries == 0)
        metrics = client.get("/metrics").text
    for project, span_ids in acked.items():
        assert stored(store, project)[0] == {span_id: 1 for span_id in span_ids}, project
    assert "infersight_spans_dead_lettered_total 0\n" in metrics
    assert "infersight_spans_rejected_total 71\n" in metrics


def test_refused_detections_of_stored_spans_are_dropped_and_the_spans_stay_single(store, tmp_path):
    # The spans are in; only their detections are refused. Splitting the batch now would give
    # the spans new tokens and store them twice, so the detections go (they can be recomputed).
    project = new_project()
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    body, span_ids = genai_spans_json(3)
    rows = to_rows(parse_traces(body, JSON), project)
    garbage = b'{"ts": "not a time"}\n'
    spool.append(Entry.compress(project, encode_rows(rows), 3, garbage, days=day_range(rows)))
    expected = span_ids + spooled(spool, project, 2)
    counters = drain(spool, store)
    raw, typed = stored(store, project)
    assert raw == typed == {span_id: 1 for span_id in expected}
    assert counters.get("detections_dropped") == 1 and counters.get("spans_stored") == 5
    assert counters.get("spans_dead_lettered") == 0
