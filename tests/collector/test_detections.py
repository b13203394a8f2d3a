"""Inline detectors in the ingest pipeline: the SDK's spans in, rows in `detections` out."""

from __future__ import annotations

import json
import threading
import time

import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from infersight import sdk
from infersight.collector import Settings, create_app
from infersight.collector._counters import Counters, not_analysed_key
from infersight.collector.ingest import Decoder, _decode
from infersight.collector.ingest._detect import MAX_OUTPUT_CHARS, detections_for
from infersight.collector.ingest._otlp import JSON, day_range, parse_traces, to_rows
from infersight.collector.spool import Entry, Spool, SpoolWriter
from infersight.collector.store import encode_rows
from tests import http
from tests.collector.otlp_bodies import genai_spans_json
from tests.conftest import wait_for

LOOP = "Let me check that for you. " + "I will now retry the lookup and report back. " * 12


def test_sdk_spans_are_checked_and_detections_are_served(collector):
    sdk.init(service_name="bot", endpoint=collector.url, tracer_provider=TracerProvider(
        resource=Resource.create({"service.name": "bot"})))
    try:
        @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
        def looping():
            return LOOP

        @sdk.traced_llm(provider="openai", model="gpt-4o-mini", expect_json=True)
        def cut_json():
            return {"choices": [{"message": {"content": '{"items": [1, 2, '}, "finish_reason": "length"}]}

        @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
        def fine():
            return "Your invoice is under Billing > Invoices."

        with sdk.tenant("acme", route="support.answer"):
            looping(), cut_json(), fine()
        assert sdk.force_flush(10_000)
    finally:
        sdk.shutdown()

    def found():
        body = http.get(f"{collector.url}/api/v1/detections", params={"since": "1h"}).json()
        return body["detections"] if len(body["detections"]) >= 2 else None

    rows = wait_for(found)
    assert rows, "no detections arrived"
    labels = sorted(r["label"] for r in rows)
    assert labels == ["json.truncated", "repetition.loop"]
    loop = next(r for r in rows if r["label"] == "repetition.loop")
    assert (loop["tenant"], loop["route"], loop["model"]) == ("acme", "support.answer", "gpt-4o-mini")
    assert "retry the lookup" in loop["evidence"]
    only_json = http.get(f"{collector.url}/api/v1/detections", params={"detector": "json"}).json()["detections"]
    assert [r["label"] for r in only_json] == ["json.truncated"]
    metrics = http.get(f"{collector.url}/metrics").text
    assert "infersight_detections_total 2" in metrics


def test_rows_without_output_are_not_parsed():
    rows = [
        {"Timestamp": "1.0", "TraceId": "a", "SpanId": "b", "SpanAttributes": {"gen_ai.operation.name": "chat"}},
        {"Timestamp": "1.0", "TraceId": "a", "SpanId": "c", "ResourceAttributes": {"infersight.project": "p"},
         "SpanAttributes": {"gen_ai.output.messages": '[{"role":"assistant","parts":[{"type":"text",'
                                                      '"content":"I\'m sorry, but I can\'t help with that."}]}]'}},
    ]
    found = detections_for(rows)
    assert [(d["label"], d["project"], d["span_id"]) for d in found] == [("refusal.phrase", "p", "c")]


def test_a_later_choice_cut_at_the_length_limit_is_flagged():
    # n=2: the first choice stopped, the second ran out of tokens; the answer shown is the first,
    # but the call did get cut, and reading only the first reason missed it.
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.response.finish_reasons": '["stop", "length"]',
        "gen_ai.output.messages": '[{"role":"assistant","parts":[{"type":"text","content":"Paris."}]}]',
    }
    rows = [{"Timestamp": "1.0", "TraceId": "a", "SpanId": "b", "ResourceAttributes": {"infersight.project": "p"},
             "SpanAttributes": attributes}]
    assert "truncation.length" in {d["label"] for d in detections_for(rows)}
    only_stop = [{**rows[0], "SpanAttributes": {**attributes, "gen_ai.response.finish_reasons": '["stop", "stop"]'}}]
    assert not [d for d in detections_for(only_stop) if d["label"].startswith("truncation")]


def _output_body(text: str, spans: int = 1) -> tuple[bytes, list[str]]:
    """An OTLP/JSON body of ``spans`` chat spans whose output is ``text``."""
    body, span_ids = genai_spans_json(spans)
    document = json.loads(body)
    output = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}])
    for span in document["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["attributes"].append({"key": "gen_ai.output.messages", "value": {"stringValue": output}})
    return json.dumps(document).encode(), span_ids


def _detections_of(store, project: str) -> list[tuple[str, str]]:
    rows = store.query("SELECT span_id, label FROM detections WHERE project = {p:String} ORDER BY span_id, label",
                       {"p": project})
    return [(r["span_id"], r["label"]) for r in rows]


def test_the_ack_waits_for_decode_and_spool_only_never_for_a_detector(store, tmp_path, monkeypatch):
    # The detectors are held until the request has been answered: the answer cannot have waited
    # for them, and their findings still arrive, once.
    release = threading.Event()
    real = _decode.detect_rows

    def held(rows: bytes) -> tuple[bytes, dict[tuple[str, str], int]]:
        assert release.wait(30)
        return real(rows)

    monkeypatch.setattr(_decode, "detect_rows", held)
    project = f"detect-after-ack-{time.time_ns()}"
    body, span_ids = _output_body(LOOP, spans=2)
    settings = Settings(data_dir=tmp_path, auth=False, alerts=False, project=project, decode_workers=0)
    with TestClient(create_app(settings, store=store)) as client:
        started = time.monotonic()
        response = client.post("/v1/traces", content=body, headers={"content-type": "application/json"})
        answered_s = time.monotonic() - started
        assert response.status_code == 200 and answered_s < 10
        assert wait_for(lambda: client.get("/api/v1/summary").json()["spans"] == 2)  # spans first
        assert _detections_of(store, project) == []
        release.set()
        assert wait_for(lambda: len(_detections_of(store, project)) >= 2)
        assert {span_id for span_id, _ in _detections_of(store, project)} == set(span_ids)
        assert "infersight_detections_total" in client.get("/metrics").text


def test_detections_computed_after_the_ack_stay_single_across_a_crash(store, tmp_path, monkeypatch):
    project = f"detect-crash-{time.time_ns()}"
    path = tmp_path / "spool.db"
    spool = Spool(path, max_bytes=1 << 30)
    rows = to_rows(parse_traces(_output_body(LOOP, spans=3)[0], JSON), project)
    spool.append(Entry.compress(project, encode_rows(rows), 3, days=day_range(rows)))
    decoder = Decoder(0, limit_bytes=1 << 20)
    writer = SpoolWriter(spool, store, Counters(), detect=decoder.detect)
    batch = spool.next_batch(max_rows=100, max_bytes=1 << 30)
    writer._store(batch)
    spool.done(batch, analyse=True)  # spans in, their analysis in the backlog

    def killed(batch):
        raise KeyboardInterrupt  # the detections are in; the process dies before the spool forgets them

    monkeypatch.setattr(spool, "analysed", killed)
    with pytest.raises(KeyboardInterrupt):
        writer.backlog._analyse(spool.next_analysis())
    spool.close()
    first = _detections_of(store, project)
    assert len(first) >= 3

    spool = Spool(path, max_bytes=1 << 30)
    counters = Counters()
    again = SpoolWriter(spool, store, counters, detect=decoder.detect, min_interval_s=0.0)
    again.start()
    try:
        assert wait_for(lambda: spool.depth().entries == spool.depth().backlog_entries == 0)
    finally:
        again.stop()
    assert counters.get("detections") == len(first)  # computed again, the same ones...
    assert _detections_of(store, project) == first  # ...and dropped as repeats


def test_an_output_over_the_budget_is_counted_not_analysed(store):
    project = f"detect-budget-{time.time_ns()}"
    huge = "again " * ((MAX_OUTPUT_CHARS // 6) + 10)
    rows = to_rows(parse_traces(_output_body(huge)[0], JSON), project)
    rows += to_rows(parse_traces(_output_body(LOOP)[0], JSON), project)
    found, not_analysed = Decoder(0, limit_bytes=1 << 30).detect(encode_rows(rows))
    assert not_analysed == {("too_large", project): 1}
    assert {json.loads(line)["span_id"] for line in found.splitlines()} == {rows[1]["SpanId"]}


def test_a_failing_detector_loses_its_detections_never_the_spans(store, tmp_path):
    project = f"detect-fails-{time.time_ns()}"
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    rows = to_rows(parse_traces(_output_body(LOOP, spans=4)[0], JSON), project)
    spool.append(Entry.compress(project, encode_rows(rows), 4, days=day_range(rows)))

    def broken(rows: bytes, sample_every: int) -> tuple[bytes, dict[tuple[str, str], int]]:
        raise RuntimeError("a detector bug")

    counters = Counters()
    writer = SpoolWriter(spool, store, counters, detect=broken, min_interval_s=0.0)
    writer.start()
    try:
        assert wait_for(lambda: spool.depth().entries == spool.depth().backlog_entries == 0)
    finally:
        writer.stop()
    assert counters.get("spans_stored") == 4 and counters.get(not_analysed_key("failed", project)) == 4
    assert _detections_of(store, project) == []


def test_the_detector_worker_finds_what_the_server_process_finds():
    # The collector's default: the detectors in a spawned, niced worker process of their own.
    rows = encode_rows(to_rows(parse_traces(_output_body(LOOP, spans=3)[0], JSON), "p"))
    spawned = Decoder(1, limit_bytes=1 << 20)
    try:
        found, not_analysed = spawned.detect(rows)
    finally:
        spawned.close()
    assert (found, not_analysed) == Decoder(0, limit_bytes=1 << 20).detect(rows)
    assert found.count(b"\n") >= 3
