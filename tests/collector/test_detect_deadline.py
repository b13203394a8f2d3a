"""Nothing after the ack waits without a bound: detector deadlines, what is not analysed, and stop."""

from __future__ import annotations

import json
import os
import time

from fastapi.testclient import TestClient

from infersight.collector import Settings, create_app
from infersight.collector._counters import not_analysed_key
from infersight.collector.ingest import Decoder
from infersight.collector.ingest._otlp import JSON, parse_traces, to_rows
from infersight.collector.store import encode_rows
from tests.collector.otlp_bodies import genai_spans_json

LOOP = "Let me check that for you. " + "I will now retry the lookup and report back. " * 12
# A schema check that jsonschema makes quadratic: uniqueItems over objects compares every pair
# (2,000 items take ~14 s here; 20,000 take hours). RE2 cannot help: it is no regex.
SLOW_SCHEMA = {"type": "array", "uniqueItems": True}
SLOW_OUTPUT = json.dumps([{"n": i} for i in range(20_000)])
# The span of the report: 2^40 steps for Python's re, one pass for RE2.
POISON_SCHEMA = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^(a+)+$"}}}
POISON_OUTPUT = json.dumps({"a": "a" * 40 + "!"})


def output_body(text: str, *, schema: dict | None = None, spans: int = 1) -> tuple[bytes, list[str]]:
    """An OTLP/JSON body of ``spans`` chat spans answering ``text``, checked against ``schema``."""
    body, span_ids = genai_spans_json(spans)
    document = json.loads(body)
    output = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}])
    for span in document["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["attributes"].append({"key": "gen_ai.output.messages", "value": {"stringValue": output}})
        if schema is not None:
            span["attributes"].append({"key": "infersight.json_schema", "value": {"stringValue": json.dumps(schema)}})
    return json.dumps(document).encode(), span_ids


def rows_of(project: str, text: str, schema: dict | None = None) -> list[dict]:
    return to_rows(parse_traces(output_body(text, schema=schema)[0], JSON), project)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_span_past_the_deadline_loses_its_worker_and_only_its_own_detections():
    rows = rows_of("fine", LOOP) + rows_of("slow", SLOW_OUTPUT, SLOW_SCHEMA) + rows_of("fine", LOOP)
    decoder = Decoder(1, limit_bytes=1 << 30, detect_deadline_s=1.0)
    try:
        decoder.detect(encode_rows(rows_of("fine", LOOP)))  # starts the worker
        worker = decoder._detect
        assert worker is not None and worker._process is not None
        stuck_pid = worker._process.pid
        found, not_analysed = decoder.detect(encode_rows(rows))
        assert worker.kills == 1 and not alive(stuck_pid)  # killed, not left running
        assert worker._process is not None and worker._process.pid != stuck_pid  # replaced
        again, nothing = decoder.detect(encode_rows(rows_of("fine", LOOP)))  # and it serves the next batch
    finally:
        decoder.close()
    assert not_analysed == {("deadline", "slow"): 1}
    spans = {json.loads(line)["span_id"] for line in found.splitlines()}
    assert spans == {rows[0]["SpanId"], rows[2]["SpanId"]}  # the spans beside it were analysed
    assert b"repetition.loop" in again and nothing == {}


def test_a_schema_re2_cannot_run_is_counted_and_the_other_checks_still_run():
    rows = rows_of("p", '{"a": "x"', {"type": "object", "properties": {"a": {"pattern": r"(a)\1"}}})
    found, not_analysed = Decoder(0, limit_bytes=1 << 30).detect(encode_rows(rows))
    assert not_analysed == {("schema_pattern", "p"): 1}
    assert [json.loads(line)["label"] for line in found.splitlines()] == ["json.truncated"]


def test_metrics_and_the_overview_count_what_was_not_analysed_by_reason(store, tmp_path):
    project = f"not-analysed-{time.time_ns()}"
    settings = Settings(data_dir=tmp_path, auth=False, alerts=False, project=project, decode_workers=0)
    with TestClient(create_app(settings, store=store)) as client:
        counters = client.app.state.counters
        assert 'id="not-analysed"' not in client.get("/").text
        counters.add(not_analysed_key("deadline", project), 2)
        counters.add(not_analysed_key("too_large", project), 1)
        counters.add(not_analysed_key("deadline", "someone-else"), 5)
        metrics = client.get("/metrics").text
        page = client.get("/").text
    assert 'infersight_outputs_not_analysed_total{reason="deadline"} 7' in metrics
    assert 'infersight_outputs_not_analysed_total{reason="too_large"} 1' in metrics
    assert 'infersight_outputs_not_analysed_total{reason="worker_lost"} 0' in metrics
    assert 'id="not-analysed"' in page
    assert "3 LLM outputs" in page and "deadline 2" in page and "too large 1" in page  # its own only
