"""The sampler against the real embedded store: rates, determinism, strata, flagged spans."""

from __future__ import annotations

import math
import time

import pytest

from infersight.judges import Sampler, SamplingPolicy, trace_fraction
from infersight.judges._types import JUDGE_ROUTE
from tests.judges.conftest import Span, insert_spans, trace_id_for

WINDOW = (time.time_ns() - 3600 * 10**9, time.time_ns() + 3600 * 10**9)


def within(count: int, n: int, p: float, sds: float = 4.0) -> bool:
    return abs(count - n * p) <= sds * math.sqrt(n * p * (1 - p))


def test_rate_is_accurate_deterministic_and_the_same_rule_as_python(judge_store, project):
    ids = [trace_id_for(project, i) for i in range(4000)]
    insert_spans(judge_store, project, [Span(t) for t in ids])
    sampler = Sampler(judge_store, SamplingPolicy(rate=0.1, min_per_stratum=0), use_detections=False)

    first = sampler.sample(project, *WINDOW)
    again = sampler.sample(project, *WINDOW)

    assert [s.span_id for s in first] == [s.span_id for s in again]
    assert within(len(first), 4000, 0.1)
    assert {s.trace_id for s in first} == {t for t in ids if trace_fraction(t) < 0.1}
    assert all(s.sample_rate == pytest.approx(0.1) for s in first)
    # A higher rate only adds spans: the 10% sample is inside the 20% one.
    wider = Sampler(judge_store, SamplingPolicy(rate=0.2, min_per_stratum=0), use_detections=False)
    assert {s.span_id for s in first} < {s.span_id for s in wider.sample(project, *WINDOW)}


def test_trace_fraction_is_uniform_and_stable():
    values = [trace_fraction(trace_id_for("u", i)) for i in range(20000)]
    assert all(0.0 <= v < 1.0 for v in values)
    assert sum(v < 0.25 for v in values) == pytest.approx(5000, abs=4 * math.sqrt(20000 * 0.25 * 0.75))
    assert trace_fraction("5b8efff798038103d269b633813fc60c") == pytest.approx(0.6836986059519911, abs=0)


def test_small_strata_are_represented(judge_store, project):
    spans = [Span(trace_id_for(project, "big", i), tenant="big") for i in range(2000)]
    spans += [Span(trace_id_for(project, "tiny", i), tenant="tiny") for i in range(3)]
    spans += [Span(trace_id_for(project, "small", i), tenant="small", route="billing.refund") for i in range(30)]
    insert_spans(judge_store, project, spans)
    policy = SamplingPolicy(rate=0.01, min_per_stratum=5)

    sample = Sampler(judge_store, policy, use_detections=False).sample(project, *WINDOW)
    by_tenant: dict[str, list] = {}
    for s in sample:
        by_tenant.setdefault(s.tenant, []).append(s)

    assert len(by_tenant["tiny"]) == 3  # fewer than min_per_stratum: judged whole
    assert {s.sample_rate for s in by_tenant["tiny"]} == {1.0}
    small_rate = policy.inclusion_rate(30)
    assert small_rate == pytest.approx(5 / 30)
    assert {s.trace_id for s in by_tenant["small"]} == {
        s.trace_id for s in spans if s.tenant == "small" and trace_fraction(s.trace_id) < small_rate
    }
    assert by_tenant["small"]
    assert within(len(by_tenant["big"]), 2000, 0.01)
    # Budget order is uniform within each stratum: a cut keeps every stratum's share.
    keys = [trace_fraction(s.trace_id) / s.sample_rate for s in sample]
    assert keys == sorted(keys)


def test_without_stratification_a_tiny_tenant_can_vanish(judge_store, project):
    ids = [t for t in (trace_id_for(project, i) for i in range(200)) if trace_fraction(t) > 0.5][:3]
    insert_spans(judge_store, project, [Span(t, tenant="tiny") for t in ids])
    plain = Sampler(judge_store, SamplingPolicy(rate=0.05, min_per_stratum=0), use_detections=False)
    stratified = Sampler(judge_store, SamplingPolicy(rate=0.05, min_per_stratum=3), use_detections=False)
    assert plain.sample(project, *WINDOW) == []
    assert len(stratified.sample(project, *WINDOW)) == 3


def test_flagged_spans_have_their_own_rate(judge_store, project):
    spans = [Span(trace_id_for(project, i)) for i in range(2000)]
    insert_spans(judge_store, project, spans)
    flagged = {s.span_id for s in spans[:1000]}
    sampler = Sampler(judge_store, SamplingPolicy(rate=0.02, min_per_stratum=0, flagged_rate=0.5),
                      use_detections=False, flagged=lambda *_: flagged)

    sample = sampler.sample(project, *WINDOW)
    hits = [s for s in sample if s.flagged]
    others = [s for s in sample if not s.flagged]

    assert {s.span_id for s in hits} <= flagged
    assert within(len(hits), 1000, 0.5)
    assert within(len(others), 1000, 0.02)
    assert {s.sample_rate for s in hits} == {0.5}


def test_flags_come_from_the_detections_table_when_it_exists(judge_store, project):
    spans = [Span(trace_id_for(project, i)) for i in range(50)]
    insert_spans(judge_store, project, spans)
    flagged = spans[:10]
    from infersight.collector.store import encode_rows

    judge_store.insert("detections", encode_rows([
        {"project": project, "ts": f"{s.ts_ns // 10**9}.000000000", "trace_id": s.trace_id, "span_id": s.span_id,
         "detector": "repetition", "label": "repetition.loop", "score": 1.0, "evidence": "..."}
        for s in flagged
    ]))

    sampler = Sampler(judge_store, SamplingPolicy(rate=0.0, min_per_stratum=0, flagged_rate=1.0))
    sample = sampler.sample(project, *WINDOW)

    assert {s.span_id for s in sample} == {s.span_id for s in flagged}
    assert all(s.flagged for s in sample)


def test_only_successful_application_llm_spans_are_candidates(judge_store, project):
    insert_spans(judge_store, project, [
        Span(trace_id_for(project, "ok"), question="q", answer="a"),
        Span(trace_id_for(project, "err"), status="Error"),
        Span(trace_id_for(project, "judge"), route=JUDGE_ROUTE, tenant="infersight"),
        Span(trace_id_for(project, "retr"), operation="retrieval"),
        Span(trace_id_for(project, "old"), ts_ns=WINDOW[0] - 10**9),
    ])
    sampler = Sampler(judge_store, SamplingPolicy(rate=1.0), use_detections=False)
    sample = sampler.with_content(sampler.sample(project, *WINDOW))
    assert [s.trace_id for s in sample] == [trace_id_for(project, "ok")]
    assert sample[0].answer == "a"
    assert [(m.role, m.content) for m in sample[0].messages] == [("user", "q")]


def test_policy_validates_its_parameters():
    with pytest.raises(ValueError, match="The 'rate' parameter of SamplingPolicy must be within"):
        SamplingPolicy(rate=1.5)
    with pytest.raises(ValueError, match="min_per_stratum"):
        SamplingPolicy(min_per_stratum=-1)


def test_traces_users_turned_down_are_judged_always_and_first(judge_store, project):
    from infersight.collector.store import feedback_rows, insert_feedback

    spans = [Span(trace_id_for(project, i)) for i in range(400)]
    insert_spans(judge_store, project, spans)
    # Of the traces the 5% base rate would skip, five got a thumbs down, one a thumbs up, one a low score.
    skipped = [s for s in spans if trace_fraction(s.trace_id) > 0.5]
    down, up, scored = skipped[:5], skipped[5], skipped[6]
    insert_feedback(judge_store, feedback_rows(
        [{"trace_id": s.trace_id, "thumbs": "down"} for s in down]
        + [{"trace_id": up.trace_id, "thumbs": "up"}, {"trace_id": scored.trace_id, "score": 0}],
        project, now_ns=time.time_ns(),
    ))
    policy = SamplingPolicy(rate=0.05, min_per_stratum=0)
    sample = Sampler(judge_store, policy, use_detections=False).sample(project, *WINDOW)
    ids = [s.span_id for s in sample]
    assert set(ids[:5]) == {s.span_id for s in down}  # first, in budget order among themselves
    assert [trace_fraction(s.trace_id) for s in sample[:5]] == sorted(trace_fraction(s.trace_id) for s in down)
    assert {s.sample_rate for s in sample[:5]} == {1.0}
    assert up.span_id not in ids and scored.span_id not in ids  # only a thumbs down counts
    assert {s.trace_id for s in sample[5:]} == {s.trace_id for s in spans if trace_fraction(s.trace_id) < 0.05}

    off = Sampler(judge_store, SamplingPolicy(rate=0.05, min_per_stratum=0, negative_feedback_rate=0.0),
                  use_detections=False).sample(project, *WINDOW)
    assert not {s.span_id for s in down} & {s.span_id for s in off}
    # Another project's thumbs down on these trace ids samples nothing here.
    assert Sampler(judge_store, policy, use_detections=False).sample(project + "-b", *WINDOW) == []
