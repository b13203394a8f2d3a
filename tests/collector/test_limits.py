"""Bounded work per request: bodies refused at the limit, metrics that can never be stored refused at once."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from infersight.collector import Settings, StoreError, create_app
from infersight.collector._server import CollectorProcess
from infersight.collector.errors import PayloadTooLarge
from infersight.collector.ingest import decode_request
from infersight.collector.ingest._otlp import JSON as OTLP_JSON
from tests.collector.otlp_bodies import genai_spans_json
from tests.conftest import LEAN_COLLECTOR, free_port

JSON = {"content-type": "application/json"}
LIMIT = 64 * 1024
# The limits are the server's, before any decoding: the processes below decode in the server
# process (no decode worker to start and stop) and evaluate no alert.
INLINE = ("--no-auth", *LEAN_COLLECTOR)


@pytest.fixture
def client(store, tmp_path) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path, auth=False, alerts=False, decode_workers=0, max_body_bytes=LIMIT,
                        project=f"limits-{time.time_ns()}")
    with TestClient(create_app(settings, store=store)) as client:
        yield client


@pytest.mark.parametrize("path", ["/v1/traces", "/v1/metrics"])
def test_a_body_over_the_limit_is_refused(client, path):
    def chunks() -> Iterator[bytes]:  # no Content-Length: the size shows only while reading
        for _ in range(4):
            yield b" " * LIMIT

    response = client.post(path, content=chunks(), headers=JSON)
    assert response.status_code == 413 and "limit of 65536 bytes" in response.text
    declared = client.post(path, content=b" " * (LIMIT + 1), headers=JSON)
    assert declared.status_code == 413 and f"body is {LIMIT + 1} bytes" in declared.text
    assert client.post(path, content=genai_spans_json(1)[0], headers=JSON).status_code == 200


def test_a_huge_chunked_body_is_answered_413_long_before_it_has_been_sent(tmp_path):
    # Over a real socket: the server stops reading at the limit (1 MiB here) and answers, while
    # the client still has most of its 256 MiB to send.
    process = CollectorProcess(tmp_path / "d", free_port(), extra_args=(*INLINE, "--max-body-mib", "1")).start()
    sent = 0
    try:
        with socket.create_connection(("127.0.0.1", process.port), timeout=60) as conn:
            conn.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")
            chunk = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
            conn.setblocking(False)
            answer = b""
            while sent < 256 << 20 and b"\r\n\r\n" not in answer:
                try:
                    sent += conn.send(chunk)
                except BlockingIOError:
                    time.sleep(0.01)
                with contextlib.suppress(BlockingIOError):
                    answer += conn.recv(65536)
    finally:
        process.stop()
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 32 << 20, f"{sent} bytes went out before the answer"


def _gauge(time_unix_nano: int, value: float = 3.0) -> bytes:
    point = {"timeUnixNano": str(time_unix_nano), "asDouble": value,
             "attributes": [{"key": "infersight.queue.name", "value": {"stringValue": "jobs"}}]}
    metric = {"name": "infersight.queue.depth", "gauge": {"dataPoints": [point]}}
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "worker"}}]}
    return json.dumps({"resourceMetrics": [{"resource": resource, "scopeMetrics": [{"metrics": [metric]}]}]}).encode()


@pytest.mark.parametrize(
    "bad_time", [0, 2**63 + 5, 2**64 - 1, time.time_ns() - 400 * 86_400 * 10**9],
    ids=["zero", "past-int64", "max", "400-days-ago"],  # stable ids: the same tests in every process
)
def test_gauge_points_that_can_never_be_stored_are_refused_not_retried_forever(client, store, bad_time):
    # A 503 here made exporters resend the same point forever.
    response = client.post("/v1/metrics", content=_gauge(bad_time), headers=JSON)
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedDataPoints"] == "1" and "outside the ingest window" in partial["errorMessage"]
    good = client.post("/v1/metrics", content=_gauge(time.time_ns(), 7.0), headers=JSON)
    assert good.status_code == 200 and good.json() == {}
    project = client.app.state.settings.project
    rows = store.query("SELECT depth FROM queue_depth WHERE project = {p:String}", {"p": project})
    assert rows == [{"depth": 7.0}]


@pytest.mark.parametrize(("path", "params"), [
    ("/api/v1/summary", {"since": "1900-01-01T00:00:00"}),
    ("/api/v1/spans", {"since": "1969-12-31"}),
    ("/api/v1/quality", {"since": "1900-01-01"}),
])
def test_ranges_before_1970_are_a_400_not_a_retry(client, path, params):
    # The store holds nothing older; a 503 here made clients retry forever.
    response = client.get(path, params=params)
    assert response.status_code == 400 and "retry-after" not in response.headers
    assert "must not reach before 1970-01-01T00:00:00Z" in response.json()["detail"]
    assert client.get(path, params={"since": "1970-01-01T00:00:00Z"}).status_code == 200


@pytest.mark.parametrize("day", ["9999-12-31", "1900-01-01"])
def test_a_day_the_store_cannot_hold_is_a_400(client, day):
    for path in ("/api/v1/digest", "/digest"):
        response = client.get(path, params={"date": day})
        assert response.status_code == 400 and "between 1970-01-01 and 2262-04-10" in response.text


def test_every_response_carries_the_security_headers(client):
    for path in ("/", "/digest", "/api/v1/summary", "/metrics", "/healthz"):
        headers = client.get(path).headers
        assert "default-src 'none'" in headers["content-security-policy"], path
        assert headers["x-content-type-options"] == "nosniff", path
    otlp = client.post("/v1/traces", content=genai_spans_json(1)[0], headers=JSON)
    assert otlp.headers["x-content-type-options"] == "nosniff"


def test_a_store_outage_is_a_503_with_retry_after_on_the_api_and_a_banner_on_pages(client, store, monkeypatch):
    def down(*args: object, **kwargs: object) -> None:
        raise StoreError("query failed: connection refused")

    monkeypatch.setattr(store, "query", down)
    api = client.get("/api/v1/summary")
    assert api.status_code == 503 and api.headers["retry-after"] == "5"
    assert api.json()["detail"].startswith("store unavailable")
    for path in ("/", "/latency", "/cost", "/traces", "/digest"):
        page = client.get(path)
        assert page.status_code == 503 and page.headers["retry-after"] == "5", path
        assert "The store is unavailable" in page.text and "content-security-policy" in page.headers, path


def test_a_body_that_stops_arriving_is_answered_408(tmp_path):
    # Half a request must not hold a connection (and its buffered bytes) forever.
    process = CollectorProcess(tmp_path / "d", free_port(), extra_args=(*INLINE, "--body-timeout", "1")).start()
    try:
        with socket.create_connection(("127.0.0.1", process.port), timeout=60) as conn:
            conn.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 1000\r\n\r\n{\"resourceSpans\": [")
            begun = time.monotonic()
            answer = conn.recv(65536)
            waited = time.monotonic() - begun
            while b"did not arrive" not in answer and (more := conn.recv(65536)):
                answer += more
    finally:
        process.stop()
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"did not arrive within 1 s" in answer
    # not before the timeout; the upper bound only says "not forever" (a loaded machine answers late)
    assert 0.9 < waited < 30


def test_a_small_body_whose_rows_would_be_huge_is_refused():
    # Every span row repeats its resource: 200 spans under a 256 KiB resource attribute would be
    # 50 MiB of rows from a body of 256 KiB.
    body, _ = genai_spans_json(200)
    document = json.loads(body)
    document["resourceSpans"][0]["resource"]["attributes"].append(
        {"key": "blob", "value": {"stringValue": "r" * (256 << 10)}}
    )
    with pytest.raises(PayloadTooLarge, match="encode to more than"):
        decode_request("p", json.dumps(document).encode(), None, OTLP_JSON, 1 << 20)
    assert decode_request("p", body, None, OTLP_JSON, 1 << 20).spans == 200  # the same spans alone pass


def _answer_until_closed(conn: socket.socket) -> bytes:
    """Everything the server sends until it closes; ConnectionResetError if it resets instead."""
    answer = b""
    while chunk := conn.recv(65536):
        answer += chunk
    return answer


def test_a_body_over_the_limit_gets_its_413_whatever_the_framing_never_a_reset(tmp_path):
    # Over a real socket, because the reset is TCP's: a server that closes with part of the body
    # unread resets the connection, and the reset can destroy the 413 before the client reads it.
    process = CollectorProcess(tmp_path / "d", free_port(), extra_args=(*INLINE, "--max-body-mib", "1")).start()
    head = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    body = b" " * (8 << 20)  # more than the socket buffers hold: the server has to read it
    chunked = b"".join(b"%x\r\n%s\r\n" % (65536, body[:65536]) for _ in range(128)) + b"0\r\n\r\n"
    senders = {
        # urllib, HTTP/1.0 clients: send everything, then read; and ask for the connection to close
        "Content-Length, Connection: close":
            head + b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body,
        "chunked, Connection: close": head + b"Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked,
        "Content-Length, keep-alive": head + b"Content-Length: %d\r\n\r\n" % len(body) + body,
        # a client that waits for the verdict before sending the 100 MiB it announces
        "Expect: 100-continue": head + b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % (100 << 20),
    }
    answers = {}
    try:
        for name, request in senders.items():
            with socket.create_connection(("127.0.0.1", process.port), timeout=60) as conn:
                conn.sendall(request)
                answers[name] = _answer_until_closed(conn)
    finally:
        process.stop()
    for name, answer in answers.items():
        head_text = answer.split(b"\r\n\r\n")[0].lower()
        assert answer.startswith(b"HTTP/1.1 413"), (name, answer[:200])
        assert b"connection: close" in head_text, name  # and the server did close: the read ended
        assert b"limit" in answer, name
