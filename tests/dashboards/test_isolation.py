"""With keys on, a project's pages and API show its own data and nothing of another project's."""

from __future__ import annotations

import json
import time

import httpx

from tests.conftest import wait_for_spans

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


def test_a_project_sees_only_its_own_data(auth_collector):
    url = auth_collector.url
    traces = {"alpha": "a" * 32, "beta": "b" * 32}
    for project in ("alpha", "beta"):
        body = otlp(f"{project}-tenant", traces[project], f"{project}-secret-output")
        headers = {**JSON, **auth_collector.headers(project)}
        assert httpx.post(f"{url}/v1/traces", content=body, headers=headers).status_code == 200
        wait_for_spans(url, 1, auth_collector.headers(project))

    for me, other in (("alpha", "beta"), ("beta", "alpha")):
        cookies = httpx.post(f"{url}/login", data={"key": auth_collector.keys[me]}).cookies
        for path in ("/latency", "/cost", "/quality", "/alerts", "/traces", "/traces?q=secret"):
            page = httpx.get(f"{url}{path}", cookies=cookies)
            assert page.status_code == 200, path
            assert f"{other}-tenant" not in page.text and traces[other] not in page.text, path
        assert f"{me}-tenant" in httpx.get(f"{url}/cost", cookies=cookies).text
        assert f"{me}-secret-output" in httpx.get(f"{url}/traces/{traces[me]}", cookies=cookies).text
        assert httpx.get(f"{url}/traces/{traces[other]}", cookies=cookies).status_code == 404

        headers = auth_collector.headers(me)
        cost = httpx.get(f"{url}/api/v1/cost", headers=headers).json()
        assert [t["name"] for t in cost["tenants"]] == [f"{me}-tenant"]
        assert cost["totals"]["cost_usd"] == 0.5
        found = httpx.get(f"{url}/api/v1/traces", headers=headers, params={"q": "secret"}).json()["traces"]
        assert [t["trace_id"] for t in found] == [traces[me]]
        assert httpx.get(f"{url}/api/v1/traces/{traces[other]}", headers=headers).status_code == 404
        # A project filter in the query string is just an unknown parameter.
        sneaky = httpx.get(f"{url}/api/v1/cost", headers=headers, params={"project": other}).json()
        assert [t["name"] for t in sneaky["tenants"]] == [f"{me}-tenant"]

    assert httpx.get(f"{url}/api/v1/latency").status_code == 401
    assert httpx.get(f"{url}/latency").status_code == 303
