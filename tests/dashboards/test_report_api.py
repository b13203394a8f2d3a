"""``/api/v1/report/weekly``: the report's figures are the read API's figures for the same week, on
both backends; a week or project without calls is a 404 that lists the weeks that have them."""

from __future__ import annotations

from tests.dashboards.data import detection_row, judge_row
from tests.dashboards.test_report import NS, W10

W09_START = int(W10.timestamp()) * NS - 7 * 86400 * NS
W10_START = int(W10.timestamp()) * NS
HOUR = 3600 * NS


def seed(dash) -> None:
    """Weeks 9 and 10, nothing since: the read API's window from Monday of week 10 until now is week 10."""
    calls = [dash.call(start_ns=W09_START + i * 7 * HOUR, trace_id=f"{i + 1:032x}", tenant="acme",
                       route="/chat", cost_usd=0.25, prefill_s=0.1) for i in range(12)]
    calls += [dash.call(start_ns=W10_START + i * 5 * HOUR, trace_id=f"{i + 101:032x}", tenant="acme",
                        route="/chat", cost_usd=0.5, error=i % 4 == 0) for i in range(16)]
    calls += [dash.call(start_ns=W10_START + i * 9 * HOUR + HOUR, trace_id=f"{i + 201:032x}", tenant="globex",
                        route="/search", model="gpt-4o", cost_usd=0.125) for i in range(8)]
    dash.add_calls(calls)
    dash.add("detections", [detection_row(calls[13], "repetition", "repetition.loop"),
                            detection_row(calls[20], "json", "json.truncated")])
    dash.add("judge_scores", [judge_row(c, 4 if c.start_ns < W10_START else 2) for c in calls[:20]])


def test_the_report_agrees_with_the_read_api(any_dash):
    seed(any_dash)
    client = any_dash.client
    report = client.get("/api/v1/report/weekly", params={"week": "2026-W10"})
    assert report.status_code == 200, report.text
    data = report.json()
    since = {"since": "2026-03-02T00:00:00Z"}
    latency = client.get("/api/v1/latency", params=since).json()
    cost = client.get("/api/v1/cost", params=since).json()
    quality = client.get("/api/v1/quality", params=since).json()

    trends = data["trends"]
    assert trends["weeks"] == [f"2026-W{w:02d}" for w in range(3, 11)]
    assert trends["calls"][-2:] == [12, latency["totals"]["requests"]] and latency["totals"]["requests"] == 24
    assert trends["error_rate"][-1] == latency["totals"]["error_rate"] == 4 / 24
    assert trends["error_rate"][-2] == 0.0 and trends["error_rate"][0] is None  # no calls is no rate
    assert trends["ttft_p95"][-1] == latency["totals"]["ttft_s"]["p95"]
    assert {d: rates[-1] for d, rates in trends["detectors"].items()} == {
        d["detector"]: d["rate"] for d in quality["detectors"]}
    by_tenant = {t["name"]: t["cost_usd"] for t in cost["tenants"]}
    assert {t["name"]: t["cost_usd"][-1] for t in trends["tenants"]} == by_tenant == {"acme": 8.0, "globex": 1.0}
    assert {r["name"]: r["cost_usd"][-1] for r in trends["routes"]} == {
        r["name"]: r["cost_usd"] for r in cost["routes"]}
    spend = next(row for row in data["headline"] if row["label"] == "Spend")
    assert spend["current"] == cost["totals"]["cost_usd"] == 9.0

    # What changed: acme (all of /chat on gpt-4o-mini) rose most in spend and errors, each linked to its traces.
    moves = {group["figure"]: group["rows"] for group in data["moves"]}
    assert {(m["dim"], m["name"], m["weight"]) for m in moves["spend"][:3]} == {
        ("tenant", "acme", 5.0), ("route", "/chat", 5.0), ("model", "gpt-4o-mini", 5.0)}
    errors = moves["error rate"][0]
    assert errors["current"] == 4 / 16 and errors["previous"] == 0.0
    assert errors["link"].startswith("/traces?") and "status=error" in errors["link"]
    assert "start=2026-03-02T00%3A00%3A00%2B00%3A00" in errors["link"]
    assert "end=2026-03-09T00%3A00%3A00%2B00%3A00" in errors["link"]
    assert trends["error_links"][-1] == (
        "/traces?status=error&start=2026-03-02T00%3A00%3A00%2B00%3A00&end=2026-03-09T00%3A00%3A00%2B00%3A00")
    assert "label=repetition" in trends["detector_links"]["repetition"][-1]
    low = data["judge_trend"][0]["rows"][0]["weeks"]
    assert low[-1]["mean"] == 2.0 and "score_max=2" in low[-1]["link"] and low[-2]["mean"] == 4.0


def test_a_week_without_calls_is_a_404_listing_the_weeks_with_calls(any_dash):
    seed(any_dash)
    empty = any_dash.client.get("/api/v1/report/weekly", params={"week": "2026-W20"})
    assert empty.status_code == 404
    body = empty.json()
    assert body["weeks_with_data"] == ["2026-W09", "2026-W10"] and body["project"] == any_dash.project
    assert body["projects_with_data"] == [any_dash.project]  # a key sees its own project only
    assert "no LLM calls" in body["detail"] and "2026-W09, 2026-W10" in body["detail"]
    bad = any_dash.client.get("/api/v1/report/weekly", params={"week": "2026-20"})
    assert bad.status_code == 400 and "ISO week like 2026-W48" in bad.text
    page = any_dash.client.get("/report/weekly", params={"week": "2026-W20"})
    assert page.status_code == 404 and "2026-W09, 2026-W10" in page.text
