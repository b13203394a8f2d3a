"""Cost loops and context stuffing: the two usual reasons "the model is expensive"."""

from __future__ import annotations

import hashlib
import json
import math
import re
import tracemalloc
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infersight import sdk
from infersight.detectors import (
    ContextStuffingDetector,
    CostLoopDetector,
    LLMCall,
    NotFittedError,
    _cost_loops,
    parse_messages,
    prompt_hash,
    usd_text,
)

from .corpora import call_corpus

S = 10**9  # one second in nanoseconds
T0 = 1_790_000_000 * S


def messages(text: str, role: str = "user") -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def call(i: int, *, at_s: float, trace: str = "", tenant: str = "acme", user: str = "u1",
         prompt: str = "What is my balance?", cost: float | None = 0.002, tokens: int = 900,
         duration_s: float = 0.5) -> LLMCall:
    return LLMCall(ts_ns=T0 + int(at_s * S), trace_id=trace or f"trace-{i}", span_id=f"span-{i:04d}",
                   prompt_hash=prompt_hash(messages(prompt)), tenant=tenant, user_id=user, route="agent.step",
                   model="gpt-4o-mini", provider="openai", input_tokens=tokens, output_tokens=100, cost_usd=cost,
                   duration_s=duration_s)


loops = CostLoopDetector()


# -- cost loops ----------------------------------------------------------------------------------


def test_same_prompt_eight_times_in_one_trace_is_a_loop_and_every_call_counts():
    calls = [call(i, at_s=i * 1.5, trace="t-loop", cost=0.001 * (i + 1)) for i in range(8)]
    found = loops.detect(calls)
    assert [f.call.span_id for f in found] == [c.span_id for c in calls]
    assert {f.detection.label for f in found} == {"cost_loop.trace"}
    assert math.isclose(sum(f.cost_usd for f in found), sum(c.cost_usd for c in calls))
    # The first four are known to loop when the fifth arrives; later calls when they arrive.
    assert [f.known_at_ns for f in found] == [calls[4].ts_ns] * 5 + [c.ts_ns for c in calls[5:]]
    assert found[0].detection.evidence.startswith(
        "same prompt 5x in trace t-loop within 10 min: $0.0150 for those calls"
    )
    assert "same prompt 8x" in found[-1].detection.evidence and "$0.0360" in found[-1].detection.evidence


def test_same_prompt_once_each_by_many_tenants_is_not_a_loop():
    calls = [call(i, at_s=i * 0.5, tenant=f"tenant-{i}", user="") for i in range(200)]
    assert loops.detect(calls) == []


def test_retries_below_the_threshold_are_not_a_loop():
    calls = [call(i, at_s=i, trace="t-retry") for i in range(4)]
    calls += [call(10 + i, at_s=i * 20, tenant="acme", user="u2") for i in range(19)]  # 19 in 6 min
    assert loops.detect(calls) == []


def test_parallel_samples_of_one_prompt_are_one_round_not_a_loop():
    calls = [call(i, at_s=i * 0.1, trace="t-sample", duration_s=2.0) for i in range(8)]  # in flight together
    assert loops.detect(calls) == []


def test_a_loop_of_parallel_rounds_counts_rounds_and_reports_every_call():
    calls = [call(3 * r + k, at_s=r * 3 + k * 0.1, trace="t-fan", duration_s=1.0) for r in range(5) for k in range(3)]
    found = loops.detect(calls)
    assert len(found) == 15
    assert found[0].detection.evidence.startswith("same prompt 5x (15 calls) in trace t-fan")


def test_one_user_resubmitting_twenty_five_times_is_a_tenant_loop():
    calls = [call(i, at_s=i * 12, tenant="globex", user="u7") for i in range(25)]  # 5 minutes
    found = loops.detect(calls)
    assert len(found) == 25
    assert {f.detection.label for f in found} == {"cost_loop.tenant"}
    assert "from tenant 'globex' user 'u7'" in found[0].detection.evidence


def test_the_same_prompt_spread_over_hours_is_not_a_loop():
    calls = [call(i, at_s=i * 360, tenant="globex", user="u7") for i in range(30)]  # every 6 minutes
    assert loops.detect(calls) == []


def test_a_trace_loop_is_reported_once_even_when_it_is_also_a_tenant_loop():
    calls = [call(i, at_s=i, trace="t-big") for i in range(30)]
    found = loops.detect(calls)
    assert len(found) == 30
    assert {f.detection.label for f in found} == {"cost_loop.trace"}


def test_calls_without_a_captured_prompt_are_never_flagged():
    calls = [replace(call(i, at_s=i, trace="t"), prompt_hash="") for i in range(10)]
    assert loops.detect(calls) == []


def test_unpriced_calls_say_so():
    calls = [call(i, at_s=i, trace="t", cost=None) for i in range(5)]
    assert "cost unknown, this call unpriced" in loops.detect(calls)[0].detection.evidence


def test_minute_windows_report_every_looping_call_exactly_once():
    # What the windowed runner does: per report minute, read the calls from 2 x window before it,
    # keep the findings known inside it. Together the minutes must give the whole-day answer.
    corpus = call_corpus(seed=3, minutes=90)
    everything = {f.call.span_id for f in loops.detect(corpus.calls)}
    assert everything >= corpus.looping
    window = int(loops.window.total_seconds() * S)
    reported: list[str] = []
    first = min(c.ts_ns for c in corpus.calls) // (60 * S) * 60 * S
    for start in range(first, first + 92 * 60 * S, 60 * S):
        end = start + 60 * S
        context = [c for c in corpus.calls if start - 2 * window <= c.ts_ns < end]
        reported += [f.call.span_id for f in loops.detect(context) if start <= f.known_at_ns < end]
    assert len(reported) == len(set(reported))
    assert set(reported) == everything


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (messages("What is my  balance?\n"), messages("what is my balance?"), True),
        (messages("What is my balance?"), '[{"role": "user", "content": "What is my balance?"}]', True),
        (messages("What is my balance?"), messages("What is my balance?", role="system"), False),
        (messages("What is my balance?"), messages("What is your balance?"), False),
        ("not json at all", "Not JSON   at all", True),
    ],
)
def test_prompt_hash_normalises_whitespace_and_case_only(a, b, same):
    assert (prompt_hash(a) == prompt_hash(b)) is same
    assert len(prompt_hash(a)) == 16


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60)
       | st.lists(st.sampled_from(["a", "B", " ", "\t", "\n", "\u00a0", "\u2003", "\u3000", "\x1c", "\x85", "."]),
                  max_size=40).map("".join))
def test_prompt_hash_is_the_hash_of_regular_expression_normalised_text(text):
    # the hash a collector gave before its normalisation became split-and-join: a loop whose
    # calls straddle an upgrade is still one prompt
    lines = [" ".join([m.role, *(part.text for part in m.parts)]) for m in parse_messages(messages(text))]
    before = re.sub(r"\s+", " ", "\n".join(lines)).strip().casefold()
    expected = hashlib.sha256(before.encode("utf-8", "replace")).hexdigest()[:16]
    assert prompt_hash(messages(text)) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["ab", "C", " ", "\t", "\n", "\u2003", "\u00df", "x" * 9]), max_size=60).map("".join),
       st.integers(min_value=1, max_value=12))
def test_prompt_hash_of_a_long_prompt_is_the_hash_of_the_whole_normalised_text(text, piece_chars):
    # Long texts are normalised a piece at a time, cut at a blank: pieces of a few characters
    # here, so that cuts fall everywhere (inside blank runs, before and after long words).
    lines = [" ".join([m.role, *(part.text for part in m.parts)]) for m in parse_messages(messages(text))]
    before = re.sub(r"\s+", " ", "\n".join(lines)).strip().casefold()
    expected = hashlib.sha256(before.encode("utf-8", "replace")).hexdigest()[:16]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_cost_loops, "_PIECE_CHARS", piece_chars)
        assert prompt_hash(messages(text)) == expected


def test_hashing_a_huge_prompt_holds_a_piece_of_it_at_a_time():
    # A 60 MiB prompt once took ~0.9 GiB to hash (a word object for each of its 10 million words),
    # in a decode worker whose stated bound is 406 MiB.
    prompt = messages("All work and no play makes a dull prompt. " * 200_000)  # 8.4 MB
    tracemalloc.start()
    try:
        prompt_hash(prompt)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * len(prompt)  # the parsed text and one piece; it was 15x


def test_prompt_hash_of_nothing_is_empty():
    assert prompt_hash("") == prompt_hash("   ") == prompt_hash(None) == ""  # type: ignore[arg-type]
    assert prompt_hash("[" * 100_000)  # deep nesting does not raise


def test_loop_parameters_are_validated():
    with pytest.raises(
        ValueError, match=r"The 'trace_min_calls' parameter of CostLoopDetector must be an int of at least 2; got 1."
    ):
        CostLoopDetector(trace_min_calls=1)
    with pytest.raises(ValueError, match="'window' parameter of CostLoopDetector must be a positive duration"):
        CostLoopDetector(window=0)  # type: ignore[arg-type]


# -- context stuffing --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def support_route() -> ContextStuffingDetector:
    reference = np.round(np.random.default_rng(0).lognormal(math.log(900), 0.5, 5000))
    return ContextStuffingDetector(price=sdk.cost_usd).fit(reference)


def stuffed(i: int, tokens: int, **kwargs: object) -> LLMCall:
    return replace(call(i, at_s=i), input_tokens=tokens, **kwargs)


def test_a_whole_document_in_the_prompt_is_stuffing_with_its_excess_cost(support_route):
    [finding] = support_route.detect([stuffed(1, 60_000), stuffed(2, 1_100)])
    assert finding.call.span_id == "span-0001"
    assert finding.detection.label == "context_stuffing.input_tokens"
    assert finding.detection.evidence.startswith("input 60,000 tokens = ")
    assert f"x the route's median {support_route.median_:,.0f} (threshold " in finding.detection.evidence
    # gpt-4o-mini input costs $0.15 per million tokens: ~59,100 excess tokens ~ $0.0089.
    assert finding.cost_usd == pytest.approx((60_000 - support_route.median_) * 0.15e-6, rel=1e-3)
    assert f"excess {usd_text(finding.cost_usd)}" in finding.detection.evidence  # $0.00887, as pages write it
    assert 0.8 < finding.detection.score < 1


def test_the_routes_own_long_tail_is_not_stuffing(support_route):
    assert support_route.threshold_ > 5 * support_route.median_
    lengths = np.random.default_rng(1).lognormal(math.log(900), 0.5, 20_000)
    ordinary = [stuffed(i, int(t)) for i, t in enumerate(lengths)]
    assert support_route.detect(ordinary) == []


def test_a_small_route_needs_the_minimum_size():
    chat = ContextStuffingDetector().fit(np.random.default_rng(2).lognormal(math.log(50), 0.3, 1000))
    assert chat.threshold_ == chat.min_tokens
    assert chat.detect([stuffed(1, 3_000)]) == []  # 60x the median, still small
    assert len(chat.detect([stuffed(2, 5_000)])) == 1


def test_without_a_price_function_the_excess_is_bounded_by_the_calls_own_cost(support_route):
    unpriced = ContextStuffingDetector().fit([900] * 300)
    [finding] = unpriced.detect([stuffed(1, 60_000, cost_usd=0.01)])
    assert finding.cost_usd == pytest.approx(0.01 * (60_000 - 900) / 60_000)
    assert "excess ≤ $0.00985" in finding.detection.evidence


def test_an_unknown_model_gets_an_upper_bound_from_the_calls_own_cost(support_route):
    [finding] = support_route.detect([stuffed(1, 50_000, model="in-house-llm", provider="", cost_usd=0.5)])
    assert finding.cost_usd == pytest.approx(0.5 * (50_000 - support_route.median_) / 50_000)
    assert "excess ≤ $0.4911" in finding.detection.evidence


def test_a_route_without_enough_reference_is_not_judged():
    detector = ContextStuffingDetector().fit([900] * 150)
    assert detector.threshold_ == math.inf
    assert detector.detect([stuffed(1, 10**6)]) == []
    assert ContextStuffingDetector().fit([]).detect([stuffed(1, 10**6)]) == []


def test_score_is_the_size_over_the_routes_median(support_route):
    assert support_route.score([support_route.median_ * 3]) == [pytest.approx(3.0)]


def test_stuffing_unfitted_use_raises_a_clear_error():
    with pytest.raises(NotFittedError, match="ContextStuffingDetector is not fitted yet"):
        ContextStuffingDetector().detect([stuffed(1, 10**6)])
