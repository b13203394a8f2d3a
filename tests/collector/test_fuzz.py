"""Fuzzing what clients send: decoders never fail except with a 4xx-shaped BadRequest, and the
running collector never answers 5xx to anything a client sent."""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infersight.collector import BadRequest
from infersight.collector.ingest._otlp import JSON, PROTOBUF, decompress, parse_traces, to_rows
from tests import http

LIMIT = 1 << 20

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
hexish = st.text(alphabet="0123456789abcdefXYZ=+/", max_size=40)
any_value = st.one_of(
    st.builds(lambda v: {"stringValue": v}, st.text(max_size=30)),
    st.builds(lambda v: {"intValue": v}, st.integers() | st.text(max_size=5)),
    st.builds(lambda v: {"doubleValue": v}, st.floats(allow_nan=True) | st.text(max_size=5)),
    st.builds(lambda v: {"boolValue": v}, st.booleans() | st.integers()),
    st.builds(lambda v: {"arrayValue": {"values": v}},
              st.lists(st.builds(lambda s: {"stringValue": s}, st.text(max_size=5)), max_size=3)),
    json_values,
)
span = st.fixed_dictionaries({}, optional={
    "traceId": hexish, "spanId": hexish, "parentSpanId": hexish, "name": st.text(max_size=20) | st.integers(),
    "kind": st.integers(-5, 10) | st.text(max_size=5),
    "startTimeUnixNano": st.integers(-10, 2**70) | st.text(max_size=25),
    "endTimeUnixNano": st.integers(-10, 2**70) | st.text(max_size=25),
    "attributes": st.lists(
        st.fixed_dictionaries({"key": st.text(max_size=15) | st.integers(), "value": any_value}), max_size=5
    ),
    "status": st.fixed_dictionaries({}, optional={"code": st.integers(-3, 5), "message": st.text(max_size=10)}),
    "events": st.lists(
        st.fixed_dictionaries({}, optional={"timeUnixNano": st.integers(0, 2**64), "name": st.text(max_size=5)}),
        max_size=2,
    ),
})
document = st.fixed_dictionaries({}, optional={"resourceSpans": st.lists(st.fixed_dictionaries({}, optional={
    "resource": st.fixed_dictionaries({}, optional={
        "attributes": st.lists(st.fixed_dictionaries({"key": st.text(max_size=10), "value": any_value}), max_size=3),
    }),
    "scopeSpans": st.lists(st.fixed_dictionaries({}, optional={"spans": st.lists(span, max_size=3)}), max_size=2),
}), max_size=2) | json_values})


def decode(body: bytes, media: str, encoding: str | None = None) -> None:
    try:
        request = parse_traces(decompress(body, encoding, LIMIT), media)
        to_rows(request, "p", [])
    except BadRequest:
        pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_random_bytes_never_crash_the_protobuf_or_json_decoder(body):
    decode(body, PROTOBUF)
    decode(body, JSON)
    decode(body, PROTOBUF, "gzip")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document)
def test_structured_otlp_json_never_crashes_the_decoder(doc):
    decode(json.dumps(doc, allow_nan=True).encode(), JSON)


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    from infersight.collector._server import CollectorProcess
    from tests.conftest import free_port

    process = CollectorProcess(
        tmp_path_factory.mktemp("fuzz"), free_port(), extra_args=("--no-auth", "--no-alerts")
    ).start()
    yield process
    process.stop()


paths = st.sampled_from(["/v1/traces", "/v1/metrics", "/api/v1/summary", "/api/v1/spans", "/api/v1/detections",
                         "/api/v1/queues", "/api/v1/alerts", "/", "/login", "/metrics", "/healthz"])
content_types = st.sampled_from(["application/x-protobuf", "application/json", "text/plain", "",
                                 "application/json; charset=utf-8", "application/x-www-form-urlencoded"])
query = st.dictionaries(st.sampled_from(["since", "limit", "detector", "range", "next"]),
                        st.text(max_size=12) | st.integers(-5, 10**12).map(str), max_size=3)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=st.sampled_from(["GET", "POST"]), path=paths, content_type=content_types, params=query,
       body=st.binary(max_size=300) | document.map(lambda d: json.dumps(d).encode()),
       gzipped=st.booleans())
def test_the_http_api_never_answers_5xx_to_client_input(running, method, path, content_type, params, body, gzipped):
    headers = {"content-type": content_type} if content_type else {}
    if gzipped:
        body = gzip.compress(body)
        headers["content-encoding"] = "gzip"
    response = http.request(method, running.url + path, params=params, content=body if method == "POST" else None,
                             headers=headers, follow_redirects=False, timeout=30)
    assert response.status_code < 500, (method, path, params, response.status_code, response.text[:300])
