"""The feedback table and its reads, on both store backends: validation of what is posted,
project isolation, the newest copy of a re-sent id, and the figures the pages read."""

from __future__ import annotations

import time
import uuid

import pytest

from infersight.collector import BadRequest
from infersight.collector.store import (
    encode_rows,
    feedback_judge_agreement,
    feedback_rows,
    feedback_series,
    insert_feedback,
    negative_feedback_traces,
    trace_feedback,
)

NS = 10**9
TRACE = "ab" * 16
SPAN = "cd" * 8


@pytest.fixture(params=["chdb", "clickhouse"])
def backend(request, store, server_stores):
    return store if request.param == "chdb" else server_stores("feedback")


def project() -> str:
    return f"fb-{uuid.uuid4().hex[:8]}"


def test_thumbs_and_scores_are_stored_and_read_back_per_trace(backend):
    p = project()
    now = time.time_ns()
    rows = feedback_rows(
        [{"trace_id": TRACE.upper(), "thumbs": "down", "comment": "<b>wrong</b>\nagain", "user_id": "u-1"},
         {"trace_id": TRACE, "span_id": SPAN, "score": 0.25, "name": "relevance"}],
        p, now_ns=now, source="sdk",
    )
    insert_feedback(backend, rows)
    got = trace_feedback(backend, p, TRACE)
    assert [(r["span_id"], r["name"], r["kind"], r["value"], r["shown"]) for r in got] == [
        ("", "user_feedback", "thumbs", 0.0, "down"), (SPAN, "relevance", "score", 0.25, "0.25"),
    ]
    assert got[0]["comment"] == "<b>wrong</b>\nagain" and got[0]["created_by"] == "u-1"
    assert got[0]["source"] == "sdk" and abs(got[0]["ts_ms"] - now // 10**6) <= 1


def test_another_project_never_sees_the_feedback(backend):
    owner, other = project(), project()
    insert_feedback(backend, feedback_rows({"trace_id": TRACE, "thumbs": "up"}, owner, now_ns=time.time_ns()))
    assert trace_feedback(backend, other, TRACE) == []
    now = time.time_ns()
    assert feedback_series(backend, other, now - 3600 * NS, now + NS, 3600) == []


def test_a_re_sent_id_is_shown_once(backend):
    p = project()
    item = {"trace_id": TRACE, "thumbs": "up", "id": "client-1"}
    insert_feedback(backend, feedback_rows(item, p, now_ns=time.time_ns()))
    insert_feedback(backend, feedback_rows(item, p, now_ns=time.time_ns() + 5 * NS))
    assert len(trace_feedback(backend, p, TRACE)) == 1


def test_series_and_negative_traces(backend):
    p = project()
    now = time.time_ns()
    hour = 3600 * NS
    down, up = "11" * 16, "22" * 16
    insert_feedback(backend, feedback_rows(
        [{"trace_id": down, "thumbs": "down"}, {"trace_id": up, "thumbs": "up"}, {"trace_id": up, "thumbs": "up"},
         {"trace_id": up, "score": 4, "name": "stars"}], p, now_ns=now - hour,
    ))
    series = feedback_series(backend, p, now - 2 * hour, now, 86400)
    by_key = {(r["name"], r["kind"]): r for r in series}
    assert by_key[("user_feedback", "thumbs")]["count"] == 3
    assert by_key[("user_feedback", "thumbs")]["negative"] == 1
    assert by_key[("user_feedback", "thumbs")]["mean"] == pytest.approx(2 / 3)
    assert by_key[("stars", "score")]["mean"] == 4.0 and by_key[("stars", "score")]["negative"] == 0
    assert negative_feedback_traces(backend, p, now - 2 * hour, now) == [down]


def judge(project: str, trace_id: str, score: int, at_ns: int, rubric: str = "helpfulness") -> dict:
    return {"project": project, "ts": f"{at_ns / NS:.9f}", "judged_at": f"{at_ns / NS:.3f}", "trace_id": trace_id,
            "span_id": trace_id[:16], "judge_model": "judge-m", "rubric_id": rubric, "rubric_version": 2,
            "score": score, "reason": "", "judge_latency_s": 0.1, "sample_rate": 1.0, "source": "live"}


def test_agreement_sets_thumbs_against_the_judges_pass_threshold_like_with_like(backend):
    p = project()
    now = time.time_ns()
    hour = 3600 * NS
    traces = [f"{i:032x}" for i in range(1, 7)]
    # trace: (judge score, thumbs); 3 passes (JUDGE_PASS_SCORE), 2 fails
    cases = {traces[0]: (5, ["up"]), traces[1]: (3, ["down"]), traces[2]: (2, ["down", "down", "up"]),
             traces[3]: (1, ["up"]), traces[4]: (4, ["up", "down"])}  # the tie says nothing
    backend.insert("judge_scores", encode_rows([judge(p, t, score, now - 2 * hour) for t, (score, _) in cases.items()]))
    backend.insert("judge_scores", encode_rows([judge(p, traces[5], 5, now - 2 * hour)]))  # judged, no thumbs
    items = [{"trace_id": t, "thumbs": v} for t, (_, votes) in cases.items() for v in votes]
    items.append({"trace_id": traces[0], "score": 1, "name": "stars"})  # a score: never set against a verdict
    insert_feedback(backend, feedback_rows(items, p, now_ns=now - hour))
    (row,) = feedback_judge_agreement(backend, p, now - 3 * hour, now)
    assert (row["name"], row["judge_model"], row["rubric_id"], row["rubric_version"]) == (
        "user_feedback", "judge-m", "helpfulness", 2)
    assert (row["traces"], row["pass_up"], row["pass_down"], row["fail_up"], row["fail_down"]) == (4, 1, 1, 1, 1)
    assert row["agreement"] == 0.5
    assert feedback_judge_agreement(backend, project(), now - 3 * hour, now) == []


@pytest.mark.parametrize(("payload", "message"), [
    ({}, "'trace_id' is required"),
    ({"trace_id": "xyz", "thumbs": "up"}, "'trace_id' must be 16 to 64 hex digits"),
    ({"trace_id": TRACE}, "exactly one of 'score'"),
    ({"trace_id": TRACE, "thumbs": "up", "score": 1}, "exactly one of 'score'"),
    ({"trace_id": TRACE, "thumbs": "sideways"}, "'thumbs' must be 'up' or 'down'"),
    ({"trace_id": TRACE, "score": "high"}, "'score' must be a finite number"),
    ({"trace_id": TRACE, "score": True}, "'score' must be a finite number"),
    ({"trace_id": TRACE, "score": 1, "span_id": "12"}, "'span_id' must be 16 hex digits"),
    ({"trace_id": TRACE, "score": 1, "name": "a b"}, "'name' must be"),
    ({"trace_id": TRACE, "score": 1, "comment": 5}, "'comment' must be a string"),
    ({"trace_id": TRACE, "score": 1, "comment": "x" * 5000}, "at most 4096"),
    ({"trace_id": TRACE, "score": 1, "project": "other"}, "unknown field 'project'"),
    ([], "non-empty list"),
    ([{"trace_id": TRACE, "score": 1}, 7], "item 1: feedback must be a JSON object"),
    ("text", "feedback must be a JSON object"),
])
def test_unusable_feedback_is_refused_with_what_is_wrong(payload, message):
    with pytest.raises(BadRequest, match=message):
        feedback_rows(payload, "p", now_ns=time.time_ns())
