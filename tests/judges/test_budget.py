"""The daily budget paced over a simulated UTC day: every hour gets judgements, the day's cap holds.

The day is driven by an explicit clock (no sleeping) against the suite's real chDB store; the
judge answers in-process, since a day's 2000 judgements over HTTP would cost seconds that the
client's own tests already spend.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence

import pytest

from infersight.judges import Budget, JudgeLoop, SamplingPolicy, Verdict, load_rubrics
from tests.judges.conftest import Span, insert_spans, trace_id_for

HOUR_S = 3600
# Yesterday, so every simulated time is in the past (as real spans' times are) and a whole day fits.
DAY0_S = (int(time.time()) // 86400 - 1) * 86400
BUSY_HOUR = 250  # judgements wanted per hour: unpaced, the default 2000 calls were gone by 08:00
CYCLE_S = 2 * HOUR_S  # the real loop runs every minute; two-hour cycles keep the simulated day fast


class InProcessJudge:
    """A judge that answers at once with a fixed cost; thread-safe like the real client."""

    model = "in-process-judge"

    def __init__(self, cost_usd: float) -> None:
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
    assert "of $1.2 spent today (paced" in report.budget_refusal


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
    insert_spans(judge_store, project, steady_traffic(project, range(0, 1), 300))
    clock = Clock(DAY0_S + HOUR_S)
    loop = make_loop(judge_store, InProcessJudge(0.0011), project, Budget(max_calls=250, paced=False), clock)
    assert loop.run_once()[project].scored == 250


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
