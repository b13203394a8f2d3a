"""The daily budget: paced over a simulated UTC day (every hour gets judgements, the day's cap
holds), and a dollar cap that refuses to run blind (unpriced judges, answers without usage).

The day is driven by an explicit clock (no sleeping) against the suite's real chDB store; the
judge answers in-process, since a day's 2000 judgements over HTTP would cost seconds that the
client's own tests already spend. The price checks use the local judge server.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Mapping, Sequence

import click
import pytest
from click.testing import CliRunner

from infersight.judges import (
    Budget,
    JudgeLoop,
    JudgeRunner,
    JudgeSettings,
    Sampler,
    SamplingPolicy,
    Verdict,
    background_options,
    judge_cli,
    judge_settings,
    load_rubrics,
)
from tests.judges.conftest import Span, insert_spans, make_client, trace_id_for

HOUR_S = 3600
# Yesterday, so every simulated time is in the past (as real spans' times are) and a whole day fits.
DAY0_S = (int(time.time()) // 86400 - 1) * 86400
BUSY_HOUR = 250  # judgements wanted per hour: unpaced, the default 2000 calls were gone by 08:00
CYCLE_S = 3 * HOUR_S  # the real loop runs every minute; three-hour cycles keep the simulated day fast


class InProcessJudge:
    """A judge that answers at once with a fixed cost; thread-safe like the real client."""

    model = "in-process-judge"

    def __init__(self, cost_usd: float | None) -> None:
        self.cost_usd = cost_usd
        self.calls = 0
        self._lock = threading.Lock()

    def judge(self, messages: Sequence[Mapping[str, str]]) -> Verdict:
        with self._lock:
            self.calls += 1
        return Verdict(score=4, reason="fine", judge_model=self.model, input_tokens=1000, output_tokens=50,
                       cost_usd=self.cost_usd)

    def close(self) -> None:
        pass


class Clock:
    def __init__(self, now_s: float) -> None:
        self.now_s = now_s

    def __call__(self) -> float:
        return self.now_s


def steady_traffic(project: str, hours: range, per_hour: int) -> list[Span]:
    return [
        Span(trace_id_for(project, h, i), question=f"q{h}.{i}?", answer="fine [[quality=4]]",
             ts_ns=(DAY0_S + h * HOUR_S) * 10**9 + i * (HOUR_S * 10**9 // per_hour))
        for h in hours for i in range(per_hour)
    ]


def make_loop(store, judge, project: str, budget: Budget, clock: Clock, every_s: int = HOUR_S) -> JudgeLoop:
    return JudgeLoop(store, judge, [load_rubrics()["helpfulness"]], policy=SamplingPolicy(rate=1.0),
                     budget=budget, concurrency=4, every_s=every_s, lookback_s=every_s, projects=[project],
                     clock=clock)


def judged_per_hour(store, project: str) -> dict[int, int]:
    rows = store.query(
        "SELECT toHour(ts) AS hour, count() AS n FROM judge_scores WHERE project = {p:String} GROUP BY hour",
        {"p": project})
    return {int(r["hour"]): int(r["n"]) for r in rows}


def ledger_of_the_day(store, project: str) -> tuple[int, float]:
    row = store.query(
        "SELECT sum(attempts) AS calls, sum(ifNull(cost_usd, 0)) AS usd FROM judge_calls"
        " WHERE project = {p:String} AND toDate(ts) = toDate(fromUnixTimestamp({day:Int64}))",
        {"p": project, "day": DAY0_S})[0]
    return int(row["calls"] or 0), float(row["usd"] or 0.0)


def test_a_steady_day_gets_judgements_every_hour_within_the_default_budget(judge_store, project):
    budget = Budget()
    insert_spans(judge_store, project, steady_traffic(project, range(24), BUSY_HOUR))
    judge = InProcessJudge(0.0011)
    clock = Clock(DAY0_S)
    loop = make_loop(judge_store, judge, project, budget, clock, every_s=CYCLE_S)
    for end_s in [*range(CYCLE_S, 86400, CYCLE_S), 86400 - 1]:  # the last cycle a second before midnight
        clock.now_s = DAY0_S + end_s
        if end_s == 12 * HOUR_S:
            loop = make_loop(judge_store, judge, project, budget, clock, every_s=CYCLE_S)  # a restarted collector
        loop.run_once()
        calls, usd = ledger_of_the_day(judge_store, project)
        assert calls <= 2000 * budget.share(clock.now_s) + 1e-9  # spend to date never runs ahead of the pace

    judged = judged_per_hour(judge_store, project)
    assert all(judged.get(hour, 0) >= 2000 / 24 / 2 for hour in range(24)), str(sorted(judged.items()))
    calls, usd = ledger_of_the_day(judge_store, project)
    assert 1990 <= calls <= 2000
    assert judge.calls == calls
    assert usd <= 5.0


def test_a_dollar_cap_is_paced_too(judge_store, project):
    insert_spans(judge_store, project, steady_traffic(project, range(6), 40))
    clock = Clock(DAY0_S + 6 * HOUR_S)
    budget = Budget(max_calls=None, max_usd=1.2)
    loop = make_loop(judge_store, InProcessJudge(0.002), project, budget, clock, every_s=6 * HOUR_S)

    report = loop.run_once()[project]

    # $1.20 a day at $0.002 a call is 600 calls; by 06:00 the pace allows 600 * (1/24 + 23/24 * 6/24).
    assert report.scored == 168
    assert report.cost_usd <= 1.2 * budget.share(clock.now_s)
    assert "of $1.20 spent today (paced" in report.budget_refusal


def test_a_quiet_morning_leaves_its_share_to_the_afternoon(judge_store, project):
    insert_spans(judge_store, project, steady_traffic(project, range(12, 13), 200))
    clock = Clock(DAY0_S + 13 * HOUR_S)
    loop = make_loop(judge_store, InProcessJudge(0.0011), project, Budget(max_calls=240), clock)

    report = loop.run_once()[project]

    # By 13:00 the pace allows 240 * (1/24 + 23/24 * 13/24) = 134.6 calls, though an hour's share is 10:
    # none went in the quiet morning.
    assert report.scored == 134
    assert report.stopped == "budget"
    assert "134 of 240 calls used today (paced" in report.budget_refusal


def test_unpaced_the_whole_day_can_go_at_once(judge_store, project):
    insert_spans(judge_store, project, steady_traffic(project, range(0, 1), 30))
    clock = Clock(DAY0_S + HOUR_S)
    loop = make_loop(judge_store, InProcessJudge(0.0011), project, Budget(max_calls=25, paced=False), clock)
    assert loop.run_once()[project].scored == 25


class CountingSampler(Sampler):
    """The real sampler, noting how many spans' content each run reads."""

    loads: list[int]

    def with_content(self, spans):
        self.loads.append(len(spans))
        return super().with_content(spans)


def test_a_run_the_budget_refuses_reads_no_content(judge_store, project):
    # Paced, most of the minute-by-minute runs are refused: they must not read an hour of content each.
    insert_spans(judge_store, project, steady_traffic(project, range(0, 1), 30))
    sampler = CountingSampler(judge_store, SamplingPolicy(rate=1.0))
    sampler.loads = []
    runner = JudgeRunner(judge_store, InProcessJudge(0.0011), [load_rubrics()["helpfulness"]], project=project,
                         sampler=sampler, budget=Budget(max_calls=5, paced=False), clock=Clock(DAY0_S + HOUR_S))
    window = (DAY0_S * 10**9, (DAY0_S + HOUR_S) * 10**9)

    first = runner.run(*window)
    second = runner.run(*window)

    assert first.scored == 5 and first.stopped == "budget"
    assert second.scored == 0 and second.stopped == "budget" and "5 of 5 calls" in second.budget_refusal
    assert second.already_judged == 5 and second.skipped_budget == 25
    assert sampler.loads == [30]  # the second run read no content


def test_the_pace_is_the_share_of_the_day_plus_the_burst():
    budget = Budget()
    assert budget.share(DAY0_S) == pytest.approx(1 / 24)
    assert budget.share(DAY0_S + 12 * HOUR_S) == pytest.approx(1 / 24 + 23 / 48)
    assert budget.share(DAY0_S + 86400 - 1) == pytest.approx(1.0, abs=1e-4)
    assert budget.share(DAY0_S + 86400) == pytest.approx(1 / 24)  # a new day
    assert Budget(burst_s=0).share(DAY0_S + 6 * HOUR_S) == pytest.approx(0.25)
    assert Budget(paced=False).share(DAY0_S) == 1.0
    with pytest.raises(ValueError, match="burst_s"):
        Budget(burst_s=-1)


UNPRICED = "my-private-judge-7b"  # a model genai-prices does not know


def test_a_dollar_cap_with_an_unpriced_judge_is_refused_before_anything_runs(judge_store, project, fake_judge):
    with pytest.raises(ValueError, match=UNPRICED) as refused:
        JudgeSettings(base_url=fake_judge.url, model=UNPRICED)
    message = str(refused.value)
    assert "--judge-price-input-mtok and --judge-price-output-mtok" in message
    assert "--judge-max-usd none" in message
    JudgeSettings(base_url=fake_judge.url, model=UNPRICED, max_usd_per_day=None)
    JudgeSettings(base_url=fake_judge.url, model=UNPRICED, price_input_mtok=0.0, price_output_mtok=0.0)
    JudgeSettings(base_url=fake_judge.url, model="gpt-4o-mini")  # genai-prices knows it

    client = make_client(fake_judge, prices=None, model=UNPRICED)
    try:
        rubrics = [load_rubrics()["helpfulness"]]
        with pytest.raises(ValueError, match=re.escape("Budget(max_usd=None)")):
            JudgeRunner(judge_store, client, rubrics, project=project)
        with pytest.raises(ValueError, match=re.escape("JudgeClient(prices=...)")):
            JudgeLoop(judge_store, client, rubrics)
        JudgeRunner(judge_store, client, rubrics, project=project, budget=Budget(max_usd=None))
    finally:
        client.close()
    assert fake_judge.request_count == 0


def test_the_cli_refuses_an_unpriced_judge_under_a_dollar_cap(judge_store, project, fake_judge, tmp_path):
    insert_spans(judge_store, project, steady_traffic(project, range(0, 1), 2))

    def run(*extra: str):
        args = ["run", "--since", "2d", "--rate", "1", "--no-progress", "--base-url", fake_judge.url,
                "--model", UNPRICED, "--data-dir", str(tmp_path), "--project", project, *extra]
        return CliRunner().invoke(judge_cli, args, obj={"store": judge_store})

    refused = run()
    assert refused.exit_code == 2
    assert UNPRICED in refused.output and "--price-input-mtok and --price-output-mtok" in refused.output
    assert "--max-usd none" in refused.output
    assert fake_judge.request_count == 0
    uncapped = run("--max-usd", "none")
    assert uncapped.exit_code == 0, uncapped.output
    assert "2 scored" in uncapped.output

    seen = []

    @click.command()
    @background_options
    def collector(**options):
        seen.append(judge_settings(options))

    result = CliRunner().invoke(collector, ["--judge-base-url", fake_judge.url, "--judge-model", UNPRICED])
    assert isinstance(result.exception, ValueError) and UNPRICED in str(result.exception)
    result = CliRunner().invoke(collector, ["--judge-base-url", fake_judge.url, "--judge-model", UNPRICED,
                                            "--judge-max-usd", "none"])
    assert result.exit_code == 0, result.output
    assert seen[-1].max_usd_per_day is None


PROMPT = [{"role": "user", "content": "Grade this.\n<answer>\nfine answer [[quality=4]]\n</answer>"}]


def test_an_answer_without_usage_counts_at_its_upper_bound_and_warns_once(fake_judge, caplog):
    client = make_client(fake_judge, max_tokens=256)  # $1 and $2 per million tokens
    fake_judge.script(["nousage", "nousage"])
    try:
        with caplog.at_level(logging.WARNING, logger="infersight.judges"):
            first, second = client.judge(PROMPT), client.judge(PROMPT)
    finally:
        client.close()

    prompt_bound = len(PROMPT[0]["content"].encode()) + 16 * 2
    assert first.cost_usd == pytest.approx((prompt_bound * 1.0 + 256 * 2.0) / 1e6)
    assert first.cost_estimated and second.cost_estimated
    warnings = [r for r in caplog.records if "without token usage" in r.getMessage()]
    assert len(warnings) == 1


def test_an_unpriced_judge_warns_once_at_run_time(fake_judge, caplog):
    client = make_client(fake_judge, prices=None, model=UNPRICED)
    try:
        with caplog.at_level(logging.WARNING, logger="infersight.judges"):
            verdicts = [client.judge(PROMPT) for _ in range(3)]
    finally:
        client.close()
    assert [v.cost_usd for v in verdicts] == [None, None, None]
    warnings = [r for r in caplog.records if "has no known price" in r.getMessage()]
    assert len(warnings) == 1 and UNPRICED in warnings[0].getMessage()


def test_answers_without_a_cost_stop_dollar_capped_judging_for_the_day(judge_store, project, caplog):
    insert_spans(judge_store, project, steady_traffic(project, range(0, 1), 10))
    clock = Clock(DAY0_S + HOUR_S)
    budget = Budget(max_calls=None, max_usd=1.0)
    judge = InProcessJudge(cost_usd=None)  # claims nothing about its price, then answers without a cost

    with caplog.at_level(logging.WARNING, logger="infersight.judges"):
        report = make_loop(judge_store, judge, project, budget, clock).run_once()[project]
        again = make_loop(judge_store, judge, project, budget, clock).run_once()[project]  # restarted: the ledger

    # Only the calls already in flight when the first answer came back without a cost went out.
    assert 1 <= report.scored <= 4 and report.stopped == "budget"
    assert "no known cost" in report.budget_refusal
    assert again.scored == 0 and "no known cost" in again.budget_refusal
    assert judge.calls == report.scored
    assert sum("cannot be checked" in r.getMessage() for r in caplog.records) == 2  # once per tracker
