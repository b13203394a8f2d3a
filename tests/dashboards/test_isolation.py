"""With keys on, a project's pages and API show its own data and nothing of another project's."""

from __future__ import annotations

import json
import time
import uuid

import httpx
from fastapi.testclient import TestClient

from infersight.collector import Settings, create_app
from infersight.collector.web import ProjectKeys
from tests.conftest import wait_for

JSON = {"content-type": "application/json"}


def otlp(tenant: str, trace_id: str, text: str) -> bytes:
    now = time.time_ns()
    attrs = {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini", "infersight.tenant.id": tenant,
        "infersight.route": f"{tenant}.route", "gen_ai.usage.input_tokens": "10", "infersight.cost.usd": "0.5",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}]),
    }
    span = {
        "traceId": trace_id, "spanId": trace_id[:16], "name": "chat gpt-4o-mini", "kind": 3,
        "startTimeUnixNano": str(now - 10**9), "endTimeUnixNano": str(now),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
    }
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": f"{tenant}-svc"}},
                               # a claim the collector must ignore: the key decides the project
                               {"key": "infersight.project", "value": {"stringValue": "alpha"}}]}
    return json.dumps(
        {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {"name": "t"}, "spans": [span]}]}]}
    ).encode()


def check_isolation(http: httpx.Client, keys: dict[str, str]) -> None:
    """Two projects' spans in, then each key sees its own project's and nothing of the other's."""
    (first, second) = keys
    traces = {first: "a" * 32, second: "b" * 32}

    def auth(project: str) -> dict[str, str]:
        return {"authorization": f"Bearer {keys[project]}"}

    for project in keys:
        body = otlp(f"{project}-tenant", traces[project], f"{project}-secret-output")
        assert http.post("/v1/traces", content=body, headers={**JSON, **auth(project)}).status_code == 200
        wait_for(lambda p=project: http.get("/api/v1/summary", headers=auth(p)).json()["spans"] >= 1)

    for me, other in ((first, second), (second, first)):
        http.cookies.clear()
        form = http.post("/login", data={"key": keys[me]}, headers={"sec-fetch-site": "same-origin"})
        assert form.status_code in (200, 303)  # the session cookie
        for path in ("/latency", "/cost", "/quality", "/alerts", "/traces", "/traces?q=secret"):
            page = http.get(path)
            assert page.status_code == 200, path
            assert f"{other}-tenant" not in page.text and traces[other] not in page.text, path
        assert f"{me}-tenant" in http.get("/cost").text
        assert f"{me}-secret-output" in http.get(f"/traces/{traces[me]}").text
        assert http.get(f"/traces/{traces[other]}").status_code == 404
        http.cookies.clear()

        headers = auth(me)
        cost = http.get("/api/v1/cost", headers=headers).json()
        assert [t["name"] for t in cost["tenants"]] == [f"{me}-tenant"]
        assert cost["totals"]["cost_usd"] == 0.5
        found = http.get("/api/v1/traces", headers=headers, params={"q": "secret"}).json()["traces"]
        assert [t["trace_id"] for t in found] == [traces[me]]
        assert http.get(f"/api/v1/traces/{traces[other]}", headers=headers).status_code == 404
        # A project filter in the query string is just an unknown parameter.
        sneaky = http.get("/api/v1/cost", headers=headers, params={"project": other}).json()
        assert [t["name"] for t in sneaky["tenants"]] == [f"{me}-tenant"]

    assert http.get("/api/v1/latency").status_code == 401
    assert http.get("/latency", follow_redirects=False).status_code == 303


def test_a_project_sees_only_its_own_data(auth_collector):
    with httpx.Client(base_url=auth_collector.url) as http:
        check_isolation(http, auth_collector.keys)


def test_isolation_holds_on_the_clickhouse_server_backend(server_store, tmp_path):
    suffix = uuid.uuid4().hex[:8]
    keys_file = ProjectKeys(tmp_path)
    keys = {project: keys_file.create(project)[0] for project in (f"alpha-{suffix}", f"beta-{suffix}")}
    keys_file.close()
    settings = Settings(data_dir=tmp_path, alerts=False, decode_workers=0)
    with TestClient(create_app(settings, store=server_store)) as http:
        check_isolation(http, keys)
