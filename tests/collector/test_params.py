"""Every read route refuses a value it cannot use with a 400 that names the parameter, and
answers 503 only when the store is down: a client retries a 503 forever."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from infersight.collector import Settings, StoreError, create_app

TRACE_ID = "0123456789abcdef0123456789abcdef"
# Query parameters pages read from the query string themselves, which OpenAPI does not list.
PAGE_PARAMS = ("range", "service", "route", "tenant", "model", "start", "end")
# Values that only steer a redirect and are made safe rather than refused.
SANITISED = {"next"}

FAR = ["1900-01-01", "0001-01-01", "1969-12-31T23:59:59", "1970-01-01T00:00:00+14:00", "9999-12-31",
       "2300-01-01", "2262-04-12T00:00:00Z"]
TIMES = [*FAR, "9999999d", "9999999w", "-5m", "0s", "NaN", "inf", "1e309", "garbage", "", " ", "\x00",
         "99999999999999999999", "24h; DROP TABLE llm_spans"]
NUMBERS = ["-1", "0", "99999999999999999999", str(2**63), "1e309", "NaN", "inf", "abc", "", "1.5"]
TEXT = ["a\x00b", "line\nbreak", "x" * 300]
CHOICES = ["garbage", "NaN", "-1", "TENANT", "x" * 300, "\x00"]
HOSTILE: dict[str, list[str]] = {
    "since": TIMES,
    "date": ["1900-01-01", "0001-01-01", "9999-12-31", "2262-04-11", "garbage", "NaN", "2024-13-01", "-1", ""],
    "limit": NUMBERS,
    "at": [v for v in NUMBERS if v not in ("0", "")] + [str(2**40)],
    "range": CHOICES,
    "by": CHOICES,
    "status": CHOICES,
    "sort": CHOICES,
    # An empty start/end is an empty form field: no window. Look-backs are for `since`.
    **{name: [v for v in TIMES if v != ""] for name in ("start", "end")},
    **{name: ["NaN", "inf", "-inf", "1e309", "abc", " ", "1,5"] for name in ("score_min", "score_max")},
    "week": ["garbage", "2026-W99", "2026-W00", "0000-W01", "99999-W01", "2026-13", "\x00", "2026-W1; DROP"],
    "format": CHOICES,
    "since_ns": [v for v in NUMBERS if v not in ("0", "1.5")] + ["-5"],
    "cursor": ["garbage", "x" * 2000, "\x00", "eyJmIjoxfQ", "eyJmIjoiIiwicCI6W10sInciOltdfQ"],
    **{name: TEXT for name in ("service", "route", "tenant", "model", "label", "q", "queue", "detector", "user",
                               "session", "tag", "error_type", "rubric")},
}
# Edge values that are fine, and must answer 200 on every route that takes them.
USABLE = {"since": ["1970-01-01T00:00:00Z", "1970-01-01", "1970-01-05", "30d", "1s", "2000-02-29T12:00:00+01:00"],
          "start": ["1970-01-01T00:00:00Z", "2000-02-29T12:00:00+01:00", ""], "end": ["2000-02-29", ""]}


@pytest.fixture
def client(store, tmp_path) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path, auth=False, alerts=False, decode_workers=0,
                        project=f"params-{time.time_ns()}")
    with TestClient(create_app(settings, store=store), raise_server_exceptions=False) as client:
        yield client


def _read_routes(client: TestClient) -> list[tuple[str, list[str]]]:
    """Every GET route with its query parameters: under /api/v1, and every page."""
    routes = []
    for path, operations in client.app.openapi()["paths"].items():
        if "get" not in operations or path in ("/healthz", "/metrics", "/openapi.json"):
            continue
        names = [p["name"] for p in operations["get"].get("parameters", []) if p["in"] == "query"]
        if not path.startswith("/api/") and path not in ("/", "/login", "/digest", "/report/weekly"):  # no filters
            names += [name for name in PAGE_PARAMS if name not in names]
        routes.append((path.replace("{trace_id}", TRACE_ID), names))
    return routes


def _said(response) -> str:
    """What a refusal says: the API's detail, or the page's error notice."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return str(response.json().get("detail"))[:160]
    notice = re.search(r'id="error">([^<]*)<', response.text)
    return html.unescape(notice.group(1))[:160] if notice else response.text[:80]


def test_the_walk_covers_the_api_and_the_pages(client):
    paths = {path for path, _ in _read_routes(client)}
    assert {"/api/v1/summary", "/api/v1/quality", "/api/v1/digest", f"/api/v1/traces/{TRACE_ID}", "/", "/latency",
            "/traces", f"/traces/{TRACE_ID}", "/digest"} <= paths
    unknown = {name for _, names in _read_routes(client) for name in names} - HOSTILE.keys() - SANITISED
    assert not unknown, f"parameters without hostile values to try: {unknown}"


def test_every_unusable_value_is_a_400_that_names_the_parameter(client):
    wrong = []
    for path, names in _read_routes(client):
        for name in names:
            for value in HOSTILE.get(name, []):
                response = client.get(path, params={name: value}, follow_redirects=False)
                if response.status_code != 400 or f"The '{name}' parameter" not in html.unescape(response.text):
                    wrong.append(f"{path}?{name}={value!r}: {response.status_code} {_said(response)}")
    assert not wrong, "\n".join(wrong)


def test_usable_edge_values_are_answered(client):
    wrong = []
    for path, names in _read_routes(client):
        for name in names:
            for value in USABLE.get(name, []):
                response = client.get(path, params={name: value}, follow_redirects=False)
                if response.status_code not in (200, 404):  # 404: the walk's trace id is in no project
                    wrong.append(f"{path}?{name}={value!r}: {response.status_code} {_said(response)}")
    assert not wrong, "\n".join(wrong)


def test_a_refusal_is_json_under_the_api_and_a_page_elsewhere(client):
    api = client.get("/api/v1/spans", params={"limit": "-1"})
    assert api.status_code == 400
    assert api.json()["detail"] == "The 'limit' parameter must be greater than or equal to 1; got '-1'."
    quality = client.get("/api/v1/quality", params={"since": "1900-01-01"})
    assert quality.status_code == 400 and "retry-after" not in quality.headers
    assert "must not reach before 1970-01-01T00:00:00Z" in quality.json()["detail"]
    page = client.get("/cost", params={"by": "nobody"})
    assert page.status_code == 400 and page.headers["content-type"].startswith("text/html")
    assert "The &#39;by&#39; parameter must be one of tenant, route, model; got &#39;nobody&#39;." in page.text
    assert 'href="/latency' in page.text  # the navigation, to carry on


def test_a_store_error_that_is_not_an_outage_is_a_500_not_a_503(client, store, monkeypatch):
    # A 503 asks the client to retry; a query the store refuses is refused again every time.
    def refused(*args: object, **kwargs: object) -> None:
        raise StoreError("query failed: Code: 457. DB::Exception: bad value (BAD_QUERY_PARAMETER)", transient=False)

    monkeypatch.setattr(store, "query", refused)
    api = client.get("/api/v1/summary")
    assert api.status_code == 500 and "retry-after" not in api.headers
    page = client.get("/latency")
    assert page.status_code == 500 and "retry-after" not in page.headers


def test_store_errors_are_classified_as_outages_or_not():
    from infersight.collector.store._base import query_error

    assert query_error(ConnectionRefusedError("[Errno 111] Connection refused")).transient
    assert query_error(RuntimeError("Code: 241. DB::Exception: limit (MEMORY_LIMIT_EXCEEDED)")).transient
    assert not query_error(RuntimeError("Code: 457. DB::Exception: Value -1 (BAD_QUERY_PARAMETER)")).transient
