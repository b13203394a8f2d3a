"""The collector over a real socket, fed by the SDK's real OTLP exporter and by raw OTLP bodies."""

from __future__ import annotations

import gzip
import json
import time

import pytest
from genai_prices import Usage, calc_price
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from infersight import sdk
from infersight.collector._server import CollectorProcess
from tests import http
from tests.conftest import free_port, wait_for_spans

PROTOBUF = {"content-type": "application/x-protobuf"}
JSON = {"content-type": "application/json"}


def send_with_sdk(url: str, calls: list[tuple[str, int, int]], fail: int = 0) -> None:
    """Trace ``calls`` (tenant, input tokens, output tokens) and ``fail`` failing calls to ``url``."""
    provider = TracerProvider(resource=Resource.create({"service.name": "checkout"}))
    sdk.init(service_name="checkout", endpoint=url, tracer_provider=provider)
    try:
        @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
        def ask(i: int, o: int):
            return {"model": "gpt-4o-mini", "usage": {"prompt_tokens": i, "completion_tokens": o}}

        @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
        def broken():
            raise ConnectionError("provider unreachable")

        for tenant_id, i, o in calls:
            with sdk.tenant(tenant_id):
                ask(i, o)
        for _ in range(fail):
            with sdk.tenant("acme"), pytest.raises(ConnectionError):
                broken()
        assert sdk.force_flush(10_000)
    finally:
        sdk.shutdown()


def cost(i: int, o: int) -> float:
    return float(calc_price(Usage(input_tokens=i, output_tokens=o), "gpt-4o-mini", provider_id="openai").total_price)


def test_summary_shows_exactly_the_spans_the_sdk_sent(collector):
    calls = [("acme", 100, 20), ("acme", 300, 50), ("globex", 1000, 10)]
    send_with_sdk(collector.url, calls, fail=1)

    summary = wait_for_spans(collector.url, 4)
    assert summary["spans"] == summary["llm_calls"] == 4
    assert summary["kinds"] == {"llm": 4}
    assert summary["llm_errors"] == 1 and summary["llm_error_rate"] == 0.25
    assert summary["input_tokens"] == 1400
    assert summary["output_tokens"] == 80
    assert summary["cost_usd"] == pytest.approx(sum(cost(i, o) for _, i, o in calls), rel=1e-9)
    p = summary["latency_s"]
    assert 0 <= p["p50"] <= p["p95"] <= p["p99"] < 5
    tenants = {t["tenant"]: t for t in summary["tenants"]}
    assert set(tenants) == {"acme", "globex"}
    assert (tenants["acme"]["llm_calls"], tenants["acme"]["llm_errors"]) == (3, 1)
    assert tenants["acme"]["input_tokens"] == 400
    assert tenants["globex"]["cost_usd"] == pytest.approx(cost(1000, 10), rel=1e-9)


def test_empty_store_summary_is_zero_with_no_percentiles(collector):
    summary = http.get(f"{collector.url}/api/v1/summary").json()
    assert summary["spans"] == 0
    assert summary["latency_s"] == {"p50": None, "p95": None, "p99": None}
    assert summary["tenants"] == []


def otlp_json(trace_id: str = "5b8efff798038103d269b633813fc60c", span_id: str = "eee19b7ec3c1b174") -> dict:
    now = time.time_ns()
    return {
        "resourceSpans": [{
            "resource": {"attributes": [
                {"key": "service.name", "value": {"stringValue": "json-svc"}},
                {"key": "infersight.project", "value": {"stringValue": "someone-else"}},
            ]},
            "scopeSpans": [{
                "scope": {"name": "manual"},
                "spans": [{
                    "traceId": trace_id,
                    "spanId": span_id,
                    "name": "chat gpt-4o",
                    "kind": 3,
                    "startTimeUnixNano": str(now - 250_000_000),
                    "endTimeUnixNano": str(now),
                    "attributes": [
                        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                        {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
                        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "42"}},
                        {"key": "gen_ai.usage.output_tokens", "value": {"intValue": 7}},
                        {"key": "infersight.tenant.id", "value": {"stringValue": "json-tenant"}},
                    ],
                    "status": {"code": 2, "message": "boom"},
                }],
            }],
        }]
    }


def test_json_otlp_with_hex_ids_is_stored_with_those_ids(collector):
    response = http.post(f"{collector.url}/v1/traces", content=json.dumps(otlp_json()), headers=JSON)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")

    wait_for_spans(collector.url, 1)
    rows = http.get(f"{collector.url}/api/v1/spans").json()["spans"]
    assert len(rows) == 1
    row = rows[0]
    assert (row["trace_id"], row["span_id"]) == ("5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174")
    assert (row["service"], row["tenant"], row["model"]) == ("json-svc", "json-tenant", "gpt-4o")
    assert (row["input_tokens"], row["output_tokens"], row["status"]) == (42, 7, "error")
    assert row["duration_s"] == pytest.approx(0.25)


def test_gzip_protobuf_is_accepted(collector):
    request = ExportTraceServiceRequest()
    from google.protobuf import json_format

    body = otlp_json()
    span = body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["traceId"] = "W47/95gDgQPSabYzgT/GDA=="  # protobuf JSON mapping: base64
    span["spanId"] = "7uGbfsPBsXQ="
    json_format.ParseDict(body, request)
    response = http.post(
        f"{collector.url}/v1/traces",
        content=gzip.compress(request.SerializeToString()),
        headers={**PROTOBUF, "content-encoding": "gzip"},
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-protobuf"
    wait_for_spans(collector.url, 1)
    rows = http.get(f"{collector.url}/api/v1/spans").json()["spans"]
    assert [r["trace_id"] for r in rows] == ["5b8efff798038103d269b633813fc60c"]


@pytest.mark.parametrize(
    ("body", "headers", "status", "message"),
    [
        (b"\xff\xff\xff\xff not protobuf", PROTOBUF, 400, "not a valid OTLP ExportTraceServiceRequest protobuf"),
        (b"{not json", JSON, 400, "not valid JSON"),
        (b"[1, 2]", JSON, 400, "must be a JSON object"),
        (json.dumps(otlp_json(trace_id="xyz")).encode(), JSON, 400, "spans[0].traceId must be a hex string"),
        (b'{"resourceSpans": 5}', JSON, 400, "resourceSpans"),
        (b"hello", {"content-type": "text/plain"}, 415, "Content-Type must be application/x-protobuf"),
        (b"not gzip at all", {**PROTOBUF, "content-encoding": "gzip"}, 400, "not valid gzip"),
    ],
    ids=["bad-protobuf", "bad-json", "json-array", "bad-hex-id", "wrong-shape", "text-plain", "bad-gzip"],
)
def test_bad_input_gets_a_4xx_that_says_what_is_wrong(collector, body, headers, status, message):
    response = http.post(f"{collector.url}/v1/traces", content=body, headers=headers)
    assert response.status_code == status
    assert message in response.text
    assert http.get(f"{collector.url}/api/v1/summary").json()["spans"] == 0


def test_gzip_bomb_is_refused_without_inflating_it(tmp_path):
    process = CollectorProcess(tmp_path / "d", free_port(), extra_args=("--no-auth", "--max-body-mib", "1")).start()
    try:
        bomb = gzip.compress(b"\0" * (8 * 1024 * 1024))
        response = http.post(
            f"{process.url}/v1/traces", content=bomb, headers={**PROTOBUF, "content-encoding": "gzip"}
        )
        assert response.status_code == 413
        assert "limit" in response.text
    finally:
        process.stop()


@pytest.mark.parametrize("headers", [PROTOBUF, JSON], ids=["protobuf", "json"])
def test_empty_request_is_ok(collector, headers):
    response = http.post(f"{collector.url}/v1/traces", content=b"", headers=headers)
    assert response.status_code == 200


def test_project_comes_from_the_collector_not_the_span(collector):
    http.post(f"{collector.url}/v1/traces", content=json.dumps(otlp_json()), headers=JSON)
    # the span claimed project "someone-else"; it is visible in this collector's project
    assert wait_for_spans(collector.url, 1)["spans"] == 1


def test_bad_since_is_a_400(collector):
    response = http.get(f"{collector.url}/api/v1/summary", params={"since": "yesterday-ish"})
    assert response.status_code == 400
    assert "look-back like 15m" in response.text


def test_unstorable_spans_are_rejected_one_by_one_with_partial_success(collector):
    body = otlp_json()
    good = body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    bad_id = dict(good, spanId="00000000000000000000", traceId="5b8efff798038103d269b633813fc60c")
    backwards = dict(good, spanId="1111111111111111", endTimeUnixNano="1")
    body["resourceSpans"][0]["scopeSpans"][0]["spans"] += [bad_id, backwards]
    response = http.post(f"{collector.url}/v1/traces", content=json.dumps(body), headers=JSON)
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "2"
    assert "span_id must be 8 non-zero bytes" in partial["errorMessage"]
    assert "end time is before start time" in partial["errorMessage"]
    assert wait_for_spans(collector.url, 1)["spans"] == 1
