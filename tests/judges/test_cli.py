"""``infersight judge ...`` through click's runner: run, panel, compare, and the gate's exit codes."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from infersight.judges._cli import CANNOT_EVALUATE, judge
from tests.judges.conftest import COST_PER_CALL, Span, insert_spans, trace_id_for
from tests.judges.panel_data import EXPECTED_DIFF, QUESTIONS, seed_versions


@pytest.fixture
def cli(judge_store, project, fake_judge, monkeypatch, tmp_path):
    monkeypatch.setenv("INFERSIGHT_JUDGE_API_KEY", "sk-test-judge-key")

    def invoke(*args: str, judge_args: bool = True):
        extra = ["--data-dir", str(tmp_path), "--project", project]  # unused: the store is given
        if judge_args:
            extra += ["--base-url", fake_judge.url, "--model", "fake-judge",
                      "--price-input-mtok", "1", "--price-output-mtok", "2"]
        return CliRunner().invoke(judge, [*args, *extra], obj={"store": judge_store})

    return invoke


def panel_id(cli) -> str:
    result = cli("panel", "create", "--route", "support.answer", "--size", "200", judge_args=False)
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


def test_run_judges_a_sample_and_reports_spend(cli, judge_store, project, fake_judge):
    insert_spans(judge_store, project, [
        Span(trace_id_for(project, i), question="q?", answer="a [[quality=5]]") for i in range(4)
    ])
    result = cli("run", "--since", "1h", "--rate", "1", "--no-progress")
    assert result.exit_code == 0, result.output
    assert "4 spans sampled; 4 scored" in result.output
    assert fake_judge.requests and all(r["model"] == "fake-judge" for r in fake_judge.requests)

    spend = cli("spend", "--since", "1d", judge_args=False)
    assert spend.exit_code == 0, spend.output
    assert f"{4 * COST_PER_CALL:.4f}" in spend.output
    scores = cli("scores", "--since", "1d", judge_args=False)
    assert "helpfulness@v1" in scores.output and "5.00" in scores.output


def test_gate_exit_codes(cli, judge_store, project):
    seed_versions(judge_store, project)
    pid = panel_id(cli)

    better = cli("gate", "--panel", pid, "--baseline", "v1", "--candidate", "v2")
    assert better.exit_code == 0, better.output
    assert "PASS" in better.output

    worse = cli("gate", "--panel", pid, "--baseline", "v2", "--candidate", "v1")
    assert worse.exit_code == 1, worse.output
    assert "FAIL" in worse.output

    tolerated = cli("gate", "--panel", pid, "--baseline", "v2", "--candidate", "v1", "--max-drop", "1")
    assert tolerated.exit_code == 0, tolerated.output

    unknown = cli("gate", "--panel", "no-such-panel", "--baseline", "v1", "--candidate", "v2")
    assert unknown.exit_code == CANNOT_EVALUATE
    assert "no panel 'no-such-panel'" in unknown.output

    no_outputs = cli("gate", "--panel", pid, "--baseline", "v1", "--candidate", "v9")
    assert no_outputs.exit_code == CANNOT_EVALUATE

    same = cli("gate", "--panel", pid, "--baseline", "v1", "--candidate", "v1")
    assert same.exit_code == 2


def test_compare_prints_the_difference_with_its_interval(cli, judge_store, project):
    seed_versions(judge_store, project)
    pid = panel_id(cli)

    text = cli("compare", "--panel", pid, "--baseline", "v1", "--candidate", "v2")
    assert text.exit_code == 0, text.output
    assert f"difference (candidate - baseline): +{EXPECTED_DIFF:.3f}  95% CI [" in text.output

    as_json = cli("compare", "--panel", pid, "--baseline", "v1", "--candidate", "v2", "--json")
    document = json.loads(as_json.stdout)
    assert document["pairs"] == QUESTIONS
    assert document["mean_diff"] == pytest.approx(EXPECTED_DIFF)
    assert document["ci_low"] > 0

    listed = cli("panel", "list", judge_args=False)
    assert pid in listed.output


def test_a_judge_that_rejects_every_call_makes_the_gate_undecided(cli, judge_store, project, fake_judge):
    seed_versions(judge_store, project)
    pid = panel_id(cli)
    fake_judge.script(["401"] * 200)
    result = cli("gate", "--panel", pid, "--baseline", "v1", "--candidate", "v2")
    assert result.exit_code == CANNOT_EVALUATE, result.output


def test_rubrics_list_and_lock(tmp_path):
    runner = CliRunner()
    listed = runner.invoke(judge, ["rubrics", "list"])
    assert listed.exit_code == 0 and "helpfulness@v1" in listed.output
    (tmp_path / "tone.j2").write_text("---\nid: tone\nversion: 1\n---\n{{ answer }}\n")
    unlocked = runner.invoke(judge, ["rubrics", "list", "--rubrics-dir", str(tmp_path)])
    assert unlocked.exit_code == 1 and "is not recorded" in unlocked.output
    locked = runner.invoke(judge, ["rubrics", "lock", str(tmp_path)])
    assert locked.exit_code == 0 and "tone@v1" in locked.output
    assert "tone@v1" in runner.invoke(judge, ["rubrics", "list", "--rubrics-dir", str(tmp_path)]).output


def test_bad_since_is_a_usage_error(cli):
    result = cli("run", "--since", "yesterday-ish", "--no-progress")
    assert result.exit_code == 2
    assert "look-back like 15m" in result.output
