"""The judges' public face is deliberate: this fails when it drifts."""

from __future__ import annotations

from infersight import judges

EXPECTED = [
    "Budget", "CircuitBreaker", "CircuitOpen", "Comparison", "GateResult", "InvalidVerdict", "Judge",
    "JudgeCallError", "JudgeClient", "JudgeError", "JudgeLoop", "JudgeRejected", "JudgeRunner",
    "JudgeSettings", "Judgement", "Message", "PairedScore", "Panel", "PanelError", "PanelItem", "Rubric",
    "RubricError", "RubricVersionError", "RunReport", "SampledSpan", "Sampler", "SamplingPolicy",
    "TransientJudgeError", "Verdict", "background_options", "compare", "create_panel", "gate",
    "judge_cli", "judge_loop_from", "judge_settings", "judge_spend", "list_panels",
    "load_panel", "load_rubrics", "lock_rubrics", "paired_bootstrap", "parse_verdict", "recent_scores",
    "router", "scores_summary", "trace_fraction",
]


def test_all_is_sorted_and_exact():
    assert judges.__all__ == sorted(judges.__all__)
    assert judges.__all__ == EXPECTED
    for name in judges.__all__:
        assert hasattr(judges, name)


def test_every_judge_error_is_an_infersight_error():
    from infersight.collector import InfersightError

    for name in ("CircuitOpen", "InvalidVerdict", "JudgeCallError", "JudgeRejected", "PanelError",
                 "RubricError", "RubricVersionError", "TransientJudgeError"):
        assert issubclass(getattr(judges, name), judges.JudgeError)
    assert issubclass(judges.JudgeError, InfersightError)
