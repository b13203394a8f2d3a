"""The background loop the collector's evaluator runs."""

from __future__ import annotations

import time

import click
import pytest
from click.testing import CliRunner

from infersight.collector._counters import Counters
from infersight.collector._jobs import Scheduler
from infersight.judges import (
    JudgeLoop,
    JudgeSettings,
    SamplingPolicy,
    judge_loop_from,
    load_rubrics,
    recent_scores,
)
from infersight.judges._cli import background_options, judge_settings
from tests.conftest import wait_for
from tests.judges.conftest import Span, insert_spans, trace_id_for


def test_the_loop_judges_each_project_with_its_own_budget(judge_store, project, fake_judge, judge_client):
    other = project + "-b"
    for name in (project, other):
        insert_spans(judge_store, name, [
            Span(trace_id_for(name, i), question=f"q{i}?", answer="fine [[quality=4]]") for i in range(3)
        ])
    def make_loop() -> JudgeLoop:
        return JudgeLoop(judge_store, judge_client, [load_rubrics()["helpfulness"]],
                         policy=SamplingPolicy(rate=1.0), every_s=3600, projects=[project, other])

    jobs = Scheduler(Counters())
    jobs.add("judge", 3600, make_loop().run_once, first_after_s=0.0)
    jobs.start()
    try:
        since = time.time_ns() - 3600 * 10**9
        assert wait_for(lambda: len(recent_scores(judge_store, other, since)) == 3, timeout_s=60)
    finally:
        jobs.stop()
    assert len(recent_scores(judge_store, project, since)) == 3
    # A restarted loop (a restarted collector) does not judge the same spans again.
    assert {p: r.already_judged for p, r in make_loop().run_once().items()} == {project: 3, other: 3}
    assert fake_judge.request_count == 6


def test_settings_fail_fast_on_bad_values():
    with pytest.raises(ValueError, match="rate"):
        JudgeSettings(base_url="http://judge/v1", rate=2.0)
    with pytest.raises(ValueError, match="base_url"):
        JudgeSettings(base_url="judge:8000")
    with pytest.raises(ValueError, match="price"):
        JudgeSettings(base_url="http://judge/v1", price_input_mtok=1.0)


def test_a_loop_from_settings_closes_its_client(judge_store, fake_judge):
    # Every rate 0: the shared store holds other tests' thumbs down, which the default would judge.
    settings = JudgeSettings(base_url=fake_judge.url, model="fake-judge", rate=0.0, min_per_stratum=0,
                             flagged_rate=0.0, negative_feedback_rate=0.0, every_s=3600,
                             price_input_mtok=1.0, price_output_mtok=2.0)
    loop = judge_loop_from(settings, judge_store)
    loop.run_once()
    loop.close()
    assert loop.judge._http.is_closed  # type: ignore[attr-defined]
    assert fake_judge.request_count == 0


def test_collector_options_become_settings():
    seen = []

    @click.command()
    @background_options
    def collector(**options):
        seen.append(judge_settings(options))
        assert options == {}

    runner = CliRunner()
    assert runner.invoke(collector, []).exit_code == 0
    assert seen[-1] is None
    result = runner.invoke(collector, ["--judge-base-url", "http://judge:8000/v1", "--judge-rate", "0.1",
                                       "--judge-rubric", "helpfulness", "--judge-rubric", "groundedness"])
    assert result.exit_code == 0, result.output
    settings = seen[-1]
    assert (settings.base_url, settings.rate, settings.rubrics, settings.provider) == (
        "http://judge:8000/v1", 0.1, ("helpfulness", "groundedness"), "openai")
    assert settings.policy().negative_feedback_rate == 1.0
    result = runner.invoke(collector, ["--judge-base-url", "http://judge:8000/v1",
                                       "--judge-negative-feedback-rate", "0"])
    assert result.exit_code == 0, result.output
    assert seen[-1].policy().negative_feedback_rate == 0.0
    result = runner.invoke(collector, ["--judge-base-url", "http://judge:8000/v1", "--judge-provider", "anthropic",
                                       "--judge-model", "claude-3-5-haiku-latest"])
    assert result.exit_code == 0, result.output
    assert (seen[-1].provider, seen[-1].model) == ("anthropic", "claude-3-5-haiku-latest")
