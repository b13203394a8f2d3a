"""Panels and the paired comparison of two app versions on a known difference."""

from __future__ import annotations

import time

import numpy as np
import pytest

from infersight.judges import (
    PanelError,
    compare,
    create_panel,
    gate,
    list_panels,
    load_panel,
    load_rubrics,
    paired_bootstrap,
)
from tests.judges.panel_data import BETTER, EXPECTED_DIFF, QUESTIONS, seed_versions

SINCE = time.time_ns() - 86400 * 10**9


@pytest.fixture
def helpfulness():
    return load_rubrics()["helpfulness"]


def test_a_panel_freezes_distinct_inputs_of_one_route(judge_store, project):
    seed_versions(judge_store, project)

    panel = create_panel(judge_store, project, "support.answer", 200, since_ns=SINCE)

    assert len(panel.items) == QUESTIONS + 5  # v1 and v2 asked the same 40 questions
    assert len({i.input_key for i in panel.items}) == len(panel.items)
    assert load_panel(judge_store, project, panel.panel_id) == panel
    assert [p["panel_id"] for p in list_panels(judge_store, project)] == [panel.panel_id]
    small = create_panel(judge_store, project, "support.answer", 10, since_ns=SINCE, panel_id="small")
    assert len(small.items) == 10
    assert {i.input_key for i in small.items} < {i.input_key for i in panel.items}
    with pytest.raises(PanelError, match="already exists"):
        create_panel(judge_store, project, "support.answer", 10, since_ns=SINCE, panel_id="small")
    with pytest.raises(PanelError, match="no successful LLM span"):
        create_panel(judge_store, project, "no.such.route", 10, since_ns=SINCE)
    with pytest.raises(PanelError, match="no panel 'nope'"):
        load_panel(judge_store, project, "nope")


def test_compare_finds_the_known_difference(judge_store, project, fake_judge, judge_client, helpfulness):
    seed_versions(judge_store, project)
    panel = create_panel(judge_store, project, "support.answer", 200, since_ns=SINCE)

    result = compare(judge_store, panel, "v1", "v2", judge=judge_client, rubric=helpfulness, since_ns=SINCE)

    assert len(result.pairs) == QUESTIONS
    assert (result.missing_baseline, result.missing_candidate, result.judge_failures) == (0, 5, 0)
    assert result.baseline_mean == pytest.approx(3.0)
    assert result.candidate_mean == pytest.approx(3.0 + EXPECTED_DIFF)
    assert result.mean_diff == pytest.approx(EXPECTED_DIFF)
    assert 0 < result.ci_low < EXPECTED_DIFF < result.ci_high <= 1
    assert fake_judge.request_count == 2 * QUESTIONS
    assert sum(p.candidate_score - p.baseline_score for p in result.pairs) == BETTER

    # The same judge and rubric version already scored these outputs: nothing is judged twice.
    fake_judge.reset()
    again = compare(judge_store, panel, "v1", "v2", judge=judge_client, rubric=helpfulness, since_ns=SINCE)
    assert fake_judge.request_count == 0
    assert again.reused_scores == 2 * QUESTIONS
    assert (again.mean_diff, again.ci_low, again.ci_high) == (result.mean_diff, result.ci_low, result.ci_high)

    scores = judge_store.query(
        "SELECT source, count() AS n FROM judge_scores WHERE project = {p:String} GROUP BY source", {"p": project})
    assert scores == [{"source": f"panel:{panel.panel_id}", "n": 2 * QUESTIONS}]


def test_gate_rules(judge_store, project, judge_client, helpfulness):
    seed_versions(judge_store, project)
    panel = create_panel(judge_store, project, "support.answer", 200, since_ns=SINCE)
    better = compare(judge_store, panel, "v1", "v2", judge=judge_client, rubric=helpfulness, since_ns=SINCE)
    worse = compare(judge_store, panel, "v2", "v1", judge=judge_client, rubric=helpfulness, since_ns=SINCE)

    assert gate(better).passed
    assert gate(better, rule="noninferior").passed
    assert not gate(worse).passed
    assert "FAIL" in gate(worse).message
    assert gate(worse, max_drop=1.0).passed
    assert not gate(worse, max_drop=0.5, rule="noninferior").passed


def test_too_few_pairs_is_an_error_not_a_verdict(judge_store, project, judge_client, helpfulness):
    seed_versions(judge_store, project)
    panel = create_panel(judge_store, project, "support.answer", 200, since_ns=SINCE)
    with pytest.raises(PanelError, match="only 0 panel inputs"):
        compare(judge_store, panel, "v1", "v3", judge=judge_client, rubric=helpfulness, since_ns=SINCE)


def test_judge_failures_drop_pairs_and_are_counted(judge_store, project, fake_judge, judge_client, helpfulness):
    seed_versions(judge_store, project)
    panel = create_panel(judge_store, project, "support.answer", 200, since_ns=SINCE)
    fake_judge.script(["garbage"] * 3)
    result = compare(judge_store, panel, "v1", "v2", judge=judge_client, rubric=helpfulness, since_ns=SINCE,
                     concurrency=1)
    # Judged in pair order, baseline then candidate: the 3 failures break the first 2 pairs.
    assert result.report.invalid_verdicts == 3
    assert result.judge_failures == 2
    assert len(result.pairs) == QUESTIONS - 2


def test_paired_bootstrap_matches_the_normal_approximation():
    rng = np.random.default_rng(7)
    baseline = rng.integers(1, 6, size=400)
    candidate = np.clip(baseline + rng.choice([-1, 0, 0, 1, 1], size=400), 1, 5)
    diff, low, high = paired_bootstrap(baseline.tolist(), candidate.tolist(), seed=1)
    d = candidate - baseline
    se = d.std(ddof=1) / np.sqrt(d.size)
    assert diff == pytest.approx(d.mean())
    assert low == pytest.approx(d.mean() - 1.96 * se, abs=0.02)
    assert high == pytest.approx(d.mean() + 1.96 * se, abs=0.02)
    assert paired_bootstrap(baseline.tolist(), candidate.tolist(), seed=1) == (diff, low, high)
    with pytest.raises(ValueError):
        paired_bootstrap([1, 2], [1])
