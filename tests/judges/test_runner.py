"""The runner: budgets in calls and dollars, invalid verdicts as failures, the ledger, no re-judging."""

from __future__ import annotations

import time

import pytest

from infersight.judges import Budget, JudgeRunner, Sampler, SamplingPolicy, judge_spend, load_rubrics, recent_scores
from tests.judges.conftest import COST_PER_CALL, Span, insert_spans, make_client, trace_id_for

SINCE = time.time_ns() - 3600 * 10**9


def spans_with_content(project: str, n: int, answer: str = "Open Billing, then History. [[quality=4]]",
                       **kw) -> list[Span]:
    return [Span(trace_id_for(project, i), question=f"question {i}?", answer=answer, **kw) for i in range(n)]


def runner(store, client, project, *, budget=None, concurrency=1, rubrics=("helpfulness",)) -> JudgeRunner:
    available = load_rubrics()
    return JudgeRunner(
        store, client, [available[r] for r in rubrics], project=project,
        sampler=Sampler(store, SamplingPolicy(rate=1.0), use_detections=False),
        budget=budget, concurrency=concurrency,
    )


def ledger(store, project):
    return store.query(
        "SELECT outcome, count() AS n, sum(attempts) AS calls, sum(ifNull(cost_usd, 0)) AS cost"
        " FROM judge_calls WHERE project = {p:String} GROUP BY outcome ORDER BY outcome", {"p": project})


def test_a_run_scores_every_sampled_span_and_records_spend(judge_store, project, fake_judge, judge_client):
    insert_spans(judge_store, project, spans_with_content(project, 12, version="v7", tenant="globex"))

    report = runner(judge_store, judge_client, project, concurrency=4).run(SINCE)

    assert (report.sampled_spans, report.scored, report.failed, report.invalid_verdicts) == (12, 12, 0, 0)
    assert report.calls == 12
    assert report.cost_usd == pytest.approx(12 * COST_PER_CALL)
    rows = recent_scores(judge_store, project, SINCE)
    assert len(rows) == 12
    row = rows[0]
    assert (row["score"], row["rubric_id"], row["rubric_version"]) == (4, "helpfulness", 1)
    assert (row["judge_model"], row["tenant"], row["route"]) == ("fake-judge", "globex", "support.answer")
    assert (row["service_version"], row["source"]) == ("v7", "sample")
    assert row["judge_cost_usd"] == pytest.approx(COST_PER_CALL)
    assert row["judge_latency_s"] > 0
    assert row["sample_rate"] == 1.0
    (spend,) = judge_spend(judge_store, project, SINCE)
    assert (int(spend["calls"]), int(spend["scored"]), spend["purpose"]) == (12, 12, "sample")
    assert float(spend["usd"]) == pytest.approx(12 * COST_PER_CALL)


def test_spans_already_judged_are_not_judged_again(judge_store, project, fake_judge, judge_client):
    insert_spans(judge_store, project, spans_with_content(project, 5))
    runner(judge_store, judge_client, project).run(SINCE)
    fake_judge.reset()

    again = runner(judge_store, judge_client, project).run(SINCE)

    assert (again.scored, again.already_judged) == (0, 5)
    assert fake_judge.request_count == 0


def test_budget_in_calls_stops_the_run_and_holds_for_the_day(judge_store, project, fake_judge, judge_client):
    insert_spans(judge_store, project, spans_with_content(project, 20))
    budget = Budget(max_calls=5, max_usd=None, paced=False)  # the day's cap itself; pacing: test_budget.py

    report = runner(judge_store, judge_client, project, budget=budget).run(SINCE)

    assert (report.scored, report.skipped_budget, report.stopped) == (5, 15, "budget")
    assert fake_judge.request_count == 5
    # A new runner (a restarted evaluator) reads today's spend from the ledger.
    later = runner(judge_store, judge_client, project, budget=budget).run(SINCE)
    assert (later.scored, later.skipped_budget) == (0, 15)
    assert fake_judge.request_count == 5


def test_budget_in_dollars_never_starts_a_call_it_cannot_afford(judge_store, project, fake_judge, judge_client):
    insert_spans(judge_store, project, spans_with_content(project, 20))
    max_usd = 3.5 * COST_PER_CALL
    budget = Budget(max_calls=None, max_usd=max_usd, paced=False)

    report = runner(judge_store, judge_client, project, budget=budget).run(SINCE)

    assert report.scored == 3
    assert report.cost_usd <= max_usd
    assert report.stopped == "budget"


def test_unparseable_verdicts_are_failures_not_scores(judge_store, project, fake_judge, judge_client):
    good = spans_with_content(project, 6)
    bad = [Span(trace_id_for(project, "bad", i), question="q?", answer="meh [[judge=garbage]]") for i in range(4)]
    insert_spans(judge_store, project, good + bad)

    report = runner(judge_store, judge_client, project).run(SINCE)

    assert (report.scored, report.invalid_verdicts) == (6, 4)
    assert {r["span_id"] for r in recent_scores(judge_store, project, SINCE)} == {s.span_id for s in good}
    outcomes = {r["outcome"]: r for r in ledger(judge_store, project)}
    assert int(outcomes["invalid_verdict"]["n"]) == 4
    assert float(outcomes["invalid_verdict"]["cost"]) == pytest.approx(4 * COST_PER_CALL)  # paid for all the same
    # The judge did answer: an invalid verdict is not retried by the next run either.
    fake_judge.reset()
    assert runner(judge_store, judge_client, project).run(SINCE).already_judged == 10
    assert fake_judge.request_count == 0


def test_an_open_breaker_stops_the_run_and_the_rest_waits(judge_store, project, fake_judge):
    from infersight.judges import CircuitBreaker

    insert_spans(judge_store, project, spans_with_content(project, 10))
    client = make_client(fake_judge, breaker=CircuitBreaker(failure_threshold=2, cooldown_s=60), max_retries=0)
    fake_judge.script(["500"] * 10)
    try:
        report = runner(judge_store, client, project).run(SINCE)
    finally:
        client.close()

    assert report.failed == 2
    assert report.skipped_circuit_open == 8
    assert report.stopped and "circuit breaker" in report.stopped
    assert fake_judge.request_count == 2


def test_spans_without_captured_content_are_skipped(judge_store, project, fake_judge, judge_client):
    insert_spans(judge_store, project, [Span(trace_id_for(project, i)) for i in range(3)])
    report = runner(judge_store, judge_client, project).run(SINCE)
    assert (report.sampled_spans, report.no_content_spans, report.scored) == (3, 3, 0)
    assert fake_judge.request_count == 0


def test_rubrics_apply_only_where_they_can(judge_store, project, fake_judge, judge_client):
    insert_spans(judge_store, project, [
        Span(trace_id_for(project, "rag"), question="q?", answer="a [[quality=5]]",
             tool="Doc: invoices are in Billing."),
        Span(trace_id_for(project, "plain"), question="q?", answer="a [[quality=2]]"),
    ])
    report = runner(judge_store, judge_client, project, rubrics=("helpfulness", "groundedness")).run(SINCE)
    assert (report.scored, report.not_applicable) == (3, 1)


def test_json_adherence_applies_where_the_app_asked_for_json(judge_store, project, fake_judge, judge_client):
    insert_spans(judge_store, project, [
        Span(trace_id_for(project, "json"), question="Give me the order id.", answer="order 17 [[quality=2]]",
             output_type="json"),
        Span(trace_id_for(project, "text"), question="Say hi.", answer="hi [[quality=5]]"),
    ])
    report = runner(judge_store, judge_client, project, rubrics=("json_adherence",)).run(SINCE)
    assert (report.scored, report.not_applicable) == (1, 1)
    (row,) = recent_scores(judge_store, project, SINCE)
    assert (row["rubric_id"], row["score"]) == ("json_adherence", 2)


def test_a_backfill_shows_a_progress_bar(judge_store, project, fake_judge, judge_client, capsys):
    insert_spans(judge_store, project, spans_with_content(project, 3))
    runner(judge_store, judge_client, project).run(SINCE, progress=True)
    assert "judging" in capsys.readouterr().err
