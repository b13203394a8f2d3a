"""The first screens answer "is anything wrong right now?": the Overview's time series and its
banner of firing alerts, chart buckets that follow the range (fresh data is a line, not a dot),
and judge weeks labelled with their dates. On both backends."""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

import pytest

from tests.dashboards.data import NS, alert_rows, judge_row

MINUTE_NS = 60 * NS


def iso(unix_ns: int) -> str:
    return datetime.fromtimestamp(unix_ns // NS, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def chart(page: str, title: str) -> str:
    match = re.search(rf'<svg class="chart" role="img" aria-label="{re.escape(title)}".*?</svg>', page, re.S)
    assert match, f"no chart {title!r}"
    return match.group(0)


def points(svg: str) -> int:
    """The buckets of a line chart: one hover target each."""
    return svg.count('fill="transparent"><title>')


@pytest.fixture
def last_minutes(any_dash):
    """Twelve calls over the last 12 minutes, the 3rd and 8th failing."""
    dash = any_dash
    now = time.time_ns()
    now = now // NS * NS  # whole seconds: a window's ISO bounds are exact
    calls = [dash.call(start_ns=now - (12 - i) * MINUTE_NS, error=i in (3, 8), cost_usd=0.001 * (i + 1))
             for i in range(12)]
    dash.add_calls(calls)
    return dash, calls


def test_the_overview_draws_the_last_hour_as_lines_that_add_up_to_its_cards(last_minutes):
    dash, _ = last_minutes
    summary = dash.client.get("/api/v1/summary", params={"since": "1h"}).json()
    series = dash.client.get("/api/v1/overview", params={"since": "1h"}).json()
    assert series["bucket_s"] == 60
    assert sum(p["calls"] for p in series["series"]) == summary["llm_calls"] == 12
    assert sum(p["errors"] for p in series["series"]) == summary["llm_errors"] == 2
    assert sum(p["cost_usd"] for p in series["series"]) == pytest.approx(summary["cost_usd"], rel=1e-12)
    assert all(p["ttft_p95_s"] is not None for p in series["series"])
    page = dash.client.get("/").text
    calls_chart = chart(page, "LLM calls")
    assert "<polyline" in calls_chart and 60 <= points(calls_chart) <= 61  # a minute a point, the hour long
    for title in ("Error rate of LLM calls", "Time to first token, p95", "Spend (calls of unknown cost not in it)"):
        chart(page, title)
    assert "one point per 1 min" in page
    assert 'id="firing"' not in page  # nothing fires: no banner


@pytest.mark.parametrize(("range_key", "bucket_s"), [("1h", 60), ("6h", 300), ("24h", 1800), ("7d", 3 * 3600),
                                                      ("30d", 12 * 3600)])
def test_buckets_follow_the_range_on_every_page(last_minutes, range_key, bucket_s):
    dash, _ = last_minutes
    span_s = {"1h": 3600, "6h": 6 * 3600, "24h": 86400, "7d": 7 * 86400, "30d": 30 * 86400}[range_key]
    for api in ("latency", "cost", "quality"):
        assert dash.client.get(f"/api/v1/{api}", params={"since": range_key}).json()["bucket_s"] == bucket_s
    # 30 to 120 points whatever the range, the empty buckets included: the x axis is time.
    latency = chart(dash.client.get("/latency", params={"range": range_key}).text, "Time to first token")
    assert points(latency) == pytest.approx(span_s / bucket_s, abs=1)
    assert 30 <= points(latency) <= 121
    quality = chart(dash.client.get("/quality", params={"range": range_key}).text,
                    "Share of LLM calls flagged, per detector")
    assert "No data in this range" in quality  # no detections, and no made-up points
    if range_key == "1h":
        assert "<polyline" in latency  # twelve minutes of calls: a line


def test_the_overview_banner_names_the_firing_alerts_with_their_links(any_dash):
    dash = any_dash
    at = time.time_ns() - 5 * MINUTE_NS
    firing, _ = alert_rows(dash.project, at, summary="support-bot: every call failing since 13:44:43",
                               link="/traces?service=support-bot&status=error")
    resolved, _ = alert_rows(dash.project, at, name="cost_anomaly", labels={"project": dash.project, "tenant": "a"},
                             firing=False)
    hostile, _ = alert_rows(dash.project, at, name="queue_stuck", labels={"project": dash.project, "queue": "q"},
                            summary="<script>alert(1)</script>", link="javascript:alert(2)")
    dash.add("alerts", [firing, resolved, hostile])
    page = dash.client.get("/", params={"range": "24h"}).text
    banner = re.search(r'<div class="notice bad" id="firing">.*?</div>', page, re.S).group(0)
    assert "2 alerts firing" in banner and "error_spike" in banner and "queue_stuck" in banner
    assert "every call failing since 13:44:43" in banner and "cost_anomaly" not in banner
    assert 'href="/traces?service=support-bot&amp;status=error"' in banner
    assert "<script>" not in banner and "javascript:" not in banner and 'href="#"' in banner


def test_judge_weeks_are_labelled_with_their_dates(any_dash):
    dash = any_dash
    call = dash.call()
    dash.add_calls([call])
    dash.add("judge_scores", [judge_row(call, 4)])
    svg = chart(dash.client.get("/quality", params={"range": "7d"}).text,
                "Mean judge score per week and app version — helpfulness v1 by judge-small")
    labels = re.findall(r'text-anchor="(?:start|middle|end)" fill="#6b7385">([^<]+)</text>', svg)
    x_labels = [label for label in labels if re.match(r"^\d{4}-\d\d-\d\d$|^\d\d:\d\d$", label)]
    assert x_labels and all(re.match(r"^\d{4}-\d\d-\d\d$", label) for label in x_labels), x_labels


def test_an_alerts_window_opens_on_every_page(last_minutes):
    dash, calls = last_minutes
    window = {"start": iso(calls[2].start_ns), "end": iso(calls[6].start_ns)}
    totals = dash.client.get("/api/v1/traces", params=window).json()["total"]
    assert totals == 4
    for path in ("/latency", "/cost", "/quality", "/traces"):
        page = dash.client.get(path, params={**window, "service": "support-bot"})
        assert page.status_code == 200, (path, page.text[:300])
        assert f"{window['start'][:16].replace('T', ' ')}" in page.text, path  # the heading names the window
    latency = dash.client.get("/latency", params=window).text
    assert re.search(r'id="calls">4<', latency)
    assert "start=" in re.search(r'<nav class="pages".*?</nav>', latency, re.S).group(0)  # kept across pages
