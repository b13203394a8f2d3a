"""Every page renders, with data and without, shows the API's numbers, and treats span text as text."""

from __future__ import annotations

import re
import time
from html.parser import HTMLParser

import pytest

from infersight.dashboards._charts import fmt
from tests.dashboards.data import alert_rows, demo_calls, demo_extras, detection_row, judge_rows_for

PAGES = ("/latency", "/cost", "/quality", "/alerts", "/traces")


def value(page: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}">([^<]*)<', page)
    assert match, f"no #{element_id} on the page"
    return match.group(1)


@pytest.fixture
def filled(any_dash):
    dash = any_dash
    calls = demo_calls(dash.project, time.time_ns(), count=120)
    dash.add_calls(calls)
    for table, rows in demo_extras(calls).items():
        dash.add(table, rows)
    return dash, calls


@pytest.mark.parametrize("path", ("/", *PAGES))
def test_pages_render_without_data(any_dash, path):
    page = any_dash.client.get(path)
    assert page.status_code == 200
    assert "content-security-policy" in page.headers and "script-src" not in page.headers["content-security-policy"]
    for href in ("/latency", "/cost", "/quality", "/alerts", "/traces"):
        assert f'href="{href}' in page.text  # the shared navigation
    if path != "/":
        assert "No data in this range" in page.text or "No " in page.text


def test_pages_render_with_data_and_match_the_api(filled):
    dash, calls = filled
    client = dash.client
    for since in ("24h", "7d"):
        api = client.get("/api/v1/latency", params={"since": since}).json()
        page = client.get("/latency", params={"range": since}).text
        assert api["totals"]["requests"] > 0
        assert value(page, "calls") == f"{api['totals']['requests']:,}"
        assert value(page, "error-rate") == f"{api['totals']['error_rate'] * 100:.1f}%"
        assert value(page, "ttft-p95") == fmt(api["totals"]["ttft_s"]["p95"], "ms")
        assert value(page, "queue-p95") == fmt(api["totals"]["queue_wait_s"]["p95"], "ms")
        assert value(page, "prefill-p95") == fmt(api["totals"]["prefill_s"]["p95"], "ms")

        api = client.get("/api/v1/cost", params={"since": since}).json()
        page = client.get("/cost", params={"range": since}).text
        assert value(page, "cost") == fmt(api["totals"]["cost_usd"], "usd")
        assert value(page, "calls") == f"{api['totals']['requests']:,}"
        assert value(page, "cost-per-1k") == fmt(api["totals"]["cost_per_1k"], "usd")
        for tenant in api["tenants"]:
            assert f">{tenant['name']}</a>" in page and fmt(tenant["cost_usd"], "usd") in page

        api = client.get("/api/v1/quality", params={"since": since}).json()
        page = client.get("/quality", params={"range": since}).text
        assert value(page, "calls") == f"{api['calls']:,}"
        for detector in api["detectors"]:
            assert value(page, f"rate-{detector['detector']}") == fmt(detector["rate"], "pct")

        api = client.get("/api/v1/traces", params={"since": since}).json()
        page = client.get("/traces", params={"range": since}).text
        assert api["traces"]
        listed = re.findall(r'href="/traces/([0-9a-f]+)', page)
        assert listed == [t["trace_id"] for t in api["traces"]]

    # The known totals: what was inserted in the last 24 hours.
    day = [c for c in calls if c.start_ns >= time.time_ns() - 86400 * 10**9]
    api = client.get("/api/v1/cost", params={"since": "24h"}).json()
    assert api["totals"]["requests"] == len(day)
    assert api["totals"]["cost_usd"] == pytest.approx(sum(c.cost_usd for c in day))
    overview = client.get("/api/v1/summary", params={"since": "24h"}).json()
    assert overview["cost_usd"] == pytest.approx(api["totals"]["cost_usd"])
    # One reference, every surface: the RAG traces' retrieval and rerank spans are no calls.
    latency = client.get("/api/v1/latency", params={"since": "24h"}).json()["totals"]
    assert overview["llm_calls"] == api["totals"]["requests"] == latency["requests"] == len(day)
    assert overview["llm_error_rate"] == pytest.approx(latency["error_rate"])
    assert overview["spans"] > overview["llm_calls"] and overview["kinds"]["llm"] == len(day)
    page = client.get("/", params={"range": "24h"}).text
    assert value(page, "llm-calls") == f"{len(day):,}"
    assert value(page, "error-rate") == f"{latency['error_rate'] * 100:.1f}%"


def test_filters_narrow_every_page(filled):
    dash, calls = filled
    client = dash.client
    acme = [c for c in calls if c.tenant == "acme"]
    api = client.get("/api/v1/cost", params={"since": "7d", "tenant": "acme"}).json()
    assert api["totals"]["requests"] == len(acme)
    assert [t["name"] for t in api["tenants"]] == ["acme"]
    latency = client.get("/api/v1/latency", params={"since": "7d", "tenant": "acme", "route": "support.answer"}).json()
    assert latency["totals"]["requests"] == sum(1 for c in acme if c.route == "support.answer")
    page = client.get("/latency", params={"range": "7d", "tenant": "acme", "route": "support.answer"}).text
    assert value(page, "calls") == f"{latency['totals']['requests']:,}"
    assert '<option value="acme" selected>' in page
    traces = client.get("/api/v1/traces", params={"since": "7d", "status": "error"}).json()["traces"]
    assert traces and all(t["errors"] for t in traces)
    labelled = client.get("/api/v1/traces", params={"since": "7d", "label": "repetition.loop"}).json()["traces"]
    assert labelled and all("repetition.loop" in t["labels"] for t in labelled)
    found = client.get("/api/v1/traces", params={"since": "7d", "q": "QUESTION 7:"}).json()["traces"]
    assert [t["trace_id"] for t in found] == [calls[7].trace_id]


HOSTILE = (
    '<script>alert(1)</script> <img src=x onerror="alert(2)"> '
    '[click me](javascript:alert(3)) <a href="javascript:alert(4)">x</a> <svg onload=alert(5)>'
)


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, attrs))


def assert_inert(html: str) -> None:
    """What a browser would build from ``html`` has no script, no image, no event handler and
    no javascript: link: the hostile text stayed text."""
    parser = _Elements()
    parser.feed(html)
    for tag, attrs in parser.found:
        assert tag not in ("script", "img", "iframe", "object", "embed"), tag
        for name, attr_value in attrs:
            assert not name.startswith("on"), (tag, name)
            if name in ("href", "src", "action", "xlink:href"):
                target = (attr_value or "").strip().lower()
                assert not target.startswith("javascript:"), (tag, attr_value)
                assert not target.startswith("data:") or (tag, target) == ("link", "data:,"), (tag, attr_value)


def test_span_text_renders_as_text_everywhere(any_dash):
    dash = any_dash  # on the embedded store and on a ClickHouse server
    call = dash.call(tenant=HOSTILE[:60], route="r<script>", model='m"><img src=x onerror=alert(1)>',
                     prompt=HOSTILE, output=HOSTILE, extra={"note": HOSTILE})
    dash.add_calls([call])
    dash.add("detections", [detection_row(call, "json", "json.malformed", evidence=HOSTILE),
                            detection_row(call, "drift", "drift.output", evidence=HOSTILE)])
    dash.add("judge_scores", judge_rows_for(call, reason=HOSTILE))
    state, event = alert_rows(dash.project, call.start_ns, summary=HOSTILE, link="javascript:alert(6)",
                              labels={"project": dash.project, "service": HOSTILE})
    dash.add("alerts", [state])
    dash.add("alert_events", [event])

    for path in ("/", *PAGES, f"/traces/{call.trace_id}", f"/traces?q={HOSTILE[:20]}"):
        page = dash.client.get(path, params={"range": "24h"} if "?" not in path else None)
        assert page.status_code == 200, path
        assert_inert(page.text)
    trace = dash.client.get(f"/traces/{call.trace_id}").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in trace  # the prompt, shown as text
    assert trace.count("javascript:alert(3)") >= 2  # prompt and output, as text, not links
    assert "<pre class=\"text output\">&lt;script&gt;" in trace
    alerts = dash.client.get("/alerts", params={"range": "24h"}).text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in alerts
    assert 'href="#"' in alerts  # the stored javascript: link is not a link


BAD_FILTERS = [
    "'", "' OR '1'='1", "'; DROP TABLE llm_spans; --", "\\", "\\'", "tenant\\N",
    "x' UNION SELECT * FROM system.tables --", "テナント'\" 😀", "{project:String}",
]


@pytest.mark.parametrize("bad", BAD_FILTERS)
def test_filters_cannot_inject_sql(any_dash, bad):
    dash = any_dash  # on the embedded store and on a ClickHouse server
    calls = [dash.call(tenant="acme"), dash.call(tenant=bad)]
    dash.add_calls(calls)
    every = {dim: bad for dim in ("service", "route", "tenant", "model")}
    for path in PAGES:
        assert dash.client.get(path, params={**every, "range": "24h", "label": bad, "q": bad}).status_code == 200
    for dim in every:
        api = dash.client.get("/api/v1/cost", params={dim: bad, "since": "24h"}).json()
        # Only the span whose tenant is literally the hostile text matches it.
        assert api["totals"]["requests"] == (1 if dim == "tenant" else 0)
    assert dash.client.get("/api/v1/traces", params={"q": bad, "label": bad, "since": "24h"}).status_code == 200
    assert dash.client.get("/api/v1/cost", params={"since": "24h"}).json()["totals"]["requests"] == 2
    assert dash.client.get("/api/v1/summary", params={"since": "24h"}).json()["spans"] == 6  # 3 GenAI spans a call


def test_control_characters_in_filters_are_refused(any_dash):
    dash = any_dash  # on the embedded store and on a ClickHouse server
    assert dash.client.get("/api/v1/latency", params={"tenant": "a\x00b"}).status_code == 400
    page = dash.client.get("/latency", params={"tenant": "a\nb"})
    assert page.status_code == 400 and 'id="error"' in page.text and "control characters" in page.text
    assert dash.client.get("/traces/not-a-trace-id").status_code == 404
    assert dash.client.get("/api/v1/traces/zz' OR 1=1").status_code == 404


def test_trace_waterfall_shows_queue_prefill_and_decode(any_dash):
    dash = any_dash  # on the embedded store and on a ClickHouse server
    call = dash.call(queue_wait_s=0.25, prefill_s=0.4, decode_s=1.2, candidates=77)
    dash.add_calls([call])
    dash.add("detections", [detection_row(call, "repetition", "repetition.loop", evidence="again and again")])
    dash.add("judge_scores", judge_rows_for(call, score=2, reason="rambles"))
    data = dash.client.get(f"/api/v1/traces/{call.trace_id}").json()
    llm = next(s for s in data["spans"] if s["operation"] == "chat")
    kinds = {seg["kind"]: seg for seg in llm["segments"]}
    assert kinds["queue"]["from_s"] == pytest.approx(-0.25) and kinds["queue"]["to_s"] == 0
    assert kinds["prefill"]["to_s"] == pytest.approx(0.4)
    assert kinds["decode"]["from_s"] == pytest.approx(0.4) and kinds["decode"]["to_s"] == pytest.approx(1.6)
    assert [d["label"] for d in llm["detections"]] == ["repetition.loop"]
    assert [j["score"] for j in llm["judge_scores"]] == [2]
    assert [s["depth"] for s in data["spans"]] == [0, 1, 1, 1]
    page = dash.client.get(f"/traces/{call.trace_id}").text
    for text in ("queue wait", "prefill", "decode", "repetition.loop", "rambles", "rerank candidates <strong>77"):
        assert text in page
    assert page.count('fill="#e08a1e"') >= 1 and page.count('fill="#7a5cc7"') >= 1  # the segments


def test_quality_degrades_without_a_judge_table(dash):
    from infersight.collector import StoreError
    from infersight.dashboards._filters import view_from_range
    from infersight.dashboards._quality import quality

    class NoJudges:
        def query(self, sql, params=None):
            if "judge_scores" in sql:
                raise StoreError("query failed: Code: 60. Table x.judge_scores does not exist. (UNKNOWN_TABLE)")
            return dash.store.query(sql, params)

    data = quality(NoJudges(), dash.project, view_from_range("7d", {}))
    assert data["judge"] == {"available": False, "groups": []}


def test_alert_links_open_the_explaining_view(dash):
    state, event = alert_rows(dash.project, time.time_ns() - 600 * 10**9, name="cost_anomaly",
                              labels={"project": dash.project, "tenant": "acme"}, link="/cost?tenant=acme")
    dash.add("alerts", [state])
    dash.add("alert_events", [event])
    page = dash.client.get("/alerts").text
    assert 'href="/cost?tenant=acme"' in page
    assert "cost_anomaly" in dash.client.get("/alerts", params={"tenant": "acme"}).text
    assert "cost_anomaly" not in dash.client.get("/alerts", params={"tenant": "globex"}).text
    assert dash.client.get("/cost", params={"tenant": "acme"}).status_code == 200
    assert dash.client.get("/latency", params={"service": "support-bot", "queue": "jobs"}).status_code == 200


def test_users_are_keyed_by_tenant_and_count_llm_calls(any_dash):
    dash = any_dash
    dash.add_calls([
        dash.call(tenant="acme", user="u-7", cost_usd=0.002),
        dash.call(tenant="acme", user="u-7", cost_usd=0.002),
        dash.call(tenant="globex", user="u-7", cost_usd=0.0005),
    ])
    users = dash.client.get("/api/v1/cost", params={"since": "24h"}).json()["users"]
    # Each call is a RAG request (retrieval, rerank, one LLM call): only the LLM calls count.
    assert [(u["tenant"], u["user_id"], u["requests"]) for u in users] == [("acme", "u-7", 2), ("globex", "u-7", 1)]
    assert users[0]["cost_usd"] == pytest.approx(0.004) and users[1]["cost_usd"] == pytest.approx(0.0005)
    page = dash.client.get("/cost", params={"range": "24h"}).text
    assert page.count("<td>u-7</td>") == 2


def test_the_earliest_start_the_store_holds_is_answered_on_both_backends(any_dash):
    # since=1970-01-01 made the judge trends start on the Monday before: a negative DateTime, a 503.
    for path in ("/api/v1/quality", "/api/v1/latency", "/api/v1/cost", "/api/v1/traces", "/api/v1/summary"):
        response = any_dash.client.get(path, params={"since": "1970-01-01T00:00:00Z"})
        assert response.status_code == 200, (path, response.text[:200])
    assert any_dash.client.get("/api/v1/quality", params={"since": "1969-12-31"}).status_code == 400
