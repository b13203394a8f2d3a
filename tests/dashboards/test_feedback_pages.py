"""Feedback on the Quality page and its JSON twin, on both backends: per (name, kind) over time,
and its agreement with the judge, like with like."""

from __future__ import annotations

import time

from infersight.collector.store import feedback_rows, insert_feedback
from tests.dashboards.data import judge_row

NS = 10**9


def test_quality_shows_feedback_per_name_and_kind_and_its_agreement_with_the_judge(any_dash):
    now = time.time_ns()
    calls = [any_dash.call(start_ns=now - (3 + i) * 3600 * NS) for i in range(4)]
    any_dash.add_calls(calls)
    # judge: pass, pass, fail, fail; users: up, down, down, up
    any_dash.add("judge_scores", [judge_row(c, s) for c, s in zip(calls, (5, 4, 1, 2), strict=True)])
    items = [{"trace_id": c.trace_id, "thumbs": t} for c, t in zip(calls, ("up", "down", "down", "up"), strict=True)]
    items += [{"trace_id": calls[0].trace_id, "score": s, "name": "stars"} for s in (2, 5)]
    insert_feedback(any_dash.store, feedback_rows(items, any_dash.project, now_ns=now - 3600 * NS))

    data = any_dash.client.get("/api/v1/quality", params={"since": "24h"}).json()["feedback"]
    groups = {(g["name"], g["kind"]): g for g in data["groups"]}
    assert set(groups) == {("user_feedback", "thumbs"), ("stars", "score")}
    assert (groups[("user_feedback", "thumbs")]["count"], groups[("user_feedback", "thumbs")]["negative"]) == (4, 2)
    assert groups[("user_feedback", "thumbs")]["mean"] == 0.5
    assert groups[("stars", "score")]["mean"] == 3.5  # never mixed with the thumbs
    (agreement,) = data["agreement"]
    assert (agreement["traces"], agreement["pass_up"], agreement["pass_down"], agreement["fail_up"],
            agreement["fail_down"], agreement["agreement"]) == (4, 1, 1, 1, 1, 0.5)

    page = any_dash.client.get("/quality", params={"range": "24h"}).text
    assert "Users&#39; feedback" in page or "Users' feedback" in page
    assert "stars: mean score" in page and "user_feedback: share of thumbs up" in page
    assert "mean score there is 3 or more" in page and "50.0%" in page


def test_quality_without_feedback_says_how_to_send_it(dash):
    page = dash.client.get("/quality", params={"range": "24h"}).text
    assert "No feedback in this range" in page and "sdk.feedback" in page
    assert "No trace in this range has both thumbs and a judge score" in page
