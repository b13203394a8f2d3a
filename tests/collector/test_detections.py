"""Inline detectors in the ingest pipeline: the SDK's spans in, rows in `detections` out."""

from __future__ import annotations

import httpx
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from infersight import sdk
from infersight.collector.ingest._detect import detections_for
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
        body = httpx.get(f"{collector.url}/api/v1/detections", params={"since": "1h"}).json()
        return body["detections"] if len(body["detections"]) >= 2 else None

    rows = wait_for(found)
    assert rows, "no detections arrived"
    labels = sorted(r["label"] for r in rows)
    assert labels == ["json.truncated", "repetition.loop"]
    loop = next(r for r in rows if r["label"] == "repetition.loop")
    assert (loop["tenant"], loop["route"], loop["model"]) == ("acme", "support.answer", "gpt-4o-mini")
    assert "retry the lookup" in loop["evidence"]
    only_json = httpx.get(f"{collector.url}/api/v1/detections", params={"detector": "json"}).json()["detections"]
    assert [r["label"] for r in only_json] == ["json.truncated"]
    metrics = httpx.get(f"{collector.url}/metrics").text
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
