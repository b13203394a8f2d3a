"""Rollups and raw spans give the same answer; charts escape what they draw."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest

from infersight.collector.store import bucket_value, merge_histograms, percentiles
from infersight.dashboards._charts import Bar, Series, hbars, line_chart, stacked_bars, waterfall
from infersight.dashboards._filters import HOUR_NS, NS, View
from infersight.dashboards._rollup import aggregate

MEASURES = ("requests", "errors", "cost_usd", "duration_s", "ttft_s", "queue_wait_s", "prefill_s", "tpot_s",
            "rerank_candidates")


@pytest.mark.parametrize("tenant", [None, "acme"])
def test_rollup_and_raw_paths_agree(dash, tenant):
    now = time.time_ns()
    base = now - now % HOUR_NS - 6 * HOUR_NS
    calls = [
        dash.call(start_ns=base + i * 600 * NS + 7 * NS, tenant=("acme", "globex")[i % 2], error=i % 5 == 0,
                  queue_wait_s=0.01 * (i + 1), prefill_s=0.1 + 0.02 * i, candidates=10 + i, cost_usd=0.001 * i)
        for i in range(30)
    ]
    dash.add_calls(calls)
    filters = {"tenant": tenant} if tenant else {}
    # A window with ragged edges: whole hours from a rollup, the rest from llm_spans.
    mixed = View(base + 1234 * NS, base + 5 * HOUR_NS + 99 * NS, 3600, filters)
    # The same window in one-minute buckets: llm_spans only.
    raw = View(mixed.start_ns, mixed.end_ns, 60, filters)
    rolled = aggregate(dash.store, dash.project, mixed, (), MEASURES, histograms=True)[0]
    minutes = aggregate(dash.store, dash.project, raw, ("bucket",), MEASURES, histograms=True)
    expected = [c for c in calls if mixed.start_ns <= c.start_ns < mixed.end_ns and (not tenant or c.tenant == tenant)]
    assert rolled["requests"] == sum(m["requests"] for m in minutes) == 3 * len(expected)  # 3 GenAI spans a call
    assert rolled["errors"] == sum(m["errors"] for m in minutes) == sum(c.error for c in expected)
    # Money is summed exactly: the same Decimal whichever source, whatever the order.
    exact = sum(Decimal(repr(c.cost_usd)).quantize(Decimal("1e-12")) for c in expected)
    assert rolled["cost_usd"] == sum(m["cost_usd"] for m in minutes) == exact
    assert rolled["rerank_candidates"] == sum(c.candidates for c in expected)
    for measure in ("duration_s", "ttft_s", "queue_wait_s", "prefill_s", "tpot_s"):
        assert rolled[measure] == merge_histograms(m[measure] for m in minutes), measure
    p = percentiles(rolled["queue_wait_s"])
    waits = sorted(c.queue_wait_s for c in expected)
    assert p["p50"] == pytest.approx(waits[(len(waits) + 1) // 2 - 1], rel=0.05)


def test_histogram_percentiles():
    assert percentiles({}) == {"p50": None, "p95": None, "p99": None, "p999": None}
    assert percentiles({0: 3})["p99"] == 0.0
    assert bucket_value(1) == pytest.approx(1e-4)
    hist = {41: 90, 81: 10}  # 90 calls near 3.2 ms, 10 near 0.1 s
    assert percentiles(hist)["p50"] == pytest.approx(bucket_value(41))
    assert percentiles(hist)["p95"] == pytest.approx(bucket_value(81))


def test_charts_escape_every_label():
    evil = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
    charts = [
        line_chart([0, 60], [Series(evil, [1.0, 2.0])], unit="ms", title=evil),
        stacked_bars([0, 60], [Series(evil, [1.0, 2.0])], unit="usd", title=evil),
        hbars([Bar(evil, [(evil, 1.0, "#000")])], unit="count", title=evil, legend=[(evil, "#000")]),
        waterfall([{"span_id": evil, "name": evil, "service": evil, "depth": 0, "offset_s": 0.0, "status": "ok",
                    "duration_s": 1.0, "segments": [{"kind": evil, "from_s": 0.0, "to_s": 1.0}]}], 1.0),
        line_chart([], [], unit="ms", title=evil),
    ]
    for chart in charts:
        assert "<script" not in chart and "<img" not in chart
        assert "&lt;script&gt;" in chart
