"""The judge client over real HTTP to a local judge: verdicts, retries, logic errors, breaker, tracing."""

from __future__ import annotations

import random

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from infersight import sdk
from infersight.judges import (
    CircuitBreaker,
    CircuitOpen,
    InvalidVerdict,
    JudgeRejected,
    TransientJudgeError,
    parse_verdict,
)
from infersight.judges._client import chat_completions_url
from tests.conftest import free_port
from tests.judges.conftest import COST_PER_CALL, make_client

PROMPT = [{"role": "user", "content": "Grade this.\n<answer>\nfine answer [[quality=4]]\n</answer>"}]


def test_a_verdict_with_its_cost_and_the_request_it_came_from(fake_judge, judge_client):
    verdict = judge_client.judge(PROMPT)

    assert (verdict.score, verdict.reason, verdict.judge_model) == (4, "rule-based verdict 4", "fake-judge")
    assert verdict.attempts == 1
    assert (verdict.input_tokens, verdict.output_tokens) == (1000, 50)
    assert verdict.cost_usd == pytest.approx(COST_PER_CALL)
    sent = fake_judge.requests[0]
    assert sent["model"] == "fake-judge"
    assert sent["messages"] == PROMPT
    assert sent["temperature"] == 0.0
    assert sent["response_format"] == {"type": "json_object"}


def test_unknown_judge_model_has_no_cost_rather_than_a_guess(fake_judge):
    client = make_client(fake_judge, prices=None, model="my-private-judge-7b")
    try:
        assert client.judge(PROMPT).cost_usd is None
    finally:
        client.close()


def test_transient_failures_are_retried_with_growing_jittered_backoff(fake_judge):
    delays: list[float] = []
    client = make_client(fake_judge, sleep=delays.append, backoff_base_s=0.1, backoff_max_s=10.0,
                         rng=random.Random(1))
    fake_judge.script(["429", "500", "timeout"])
    try:
        verdict = client.judge(PROMPT)
    finally:
        client.close()

    assert verdict.score == 4
    assert verdict.attempts == 4
    assert fake_judge.request_count == 4
    assert len(delays) == 3
    for attempt, delay in enumerate(delays):
        assert 0.0 <= delay <= 0.1 * 2**attempt
    assert len(set(delays)) == 3  # jittered, not a fixed schedule


def test_transient_failures_give_up_after_max_retries(fake_judge):
    client = make_client(fake_judge, max_retries=2)
    fake_judge.script(["503", "503", "503", "503"])
    try:
        with pytest.raises(TransientJudgeError) as caught:
            client.judge(PROMPT)
    finally:
        client.close()
    assert caught.value.attempts == 3
    assert caught.value.status_code == 503
    assert fake_judge.request_count == 3


@pytest.mark.parametrize("status", ["400", "401"])
def test_logic_errors_are_never_retried(fake_judge, judge_client, status):
    fake_judge.script([status])
    with pytest.raises(JudgeRejected) as caught:
        judge_client.judge(PROMPT)
    assert caught.value.status_code == int(status)
    assert caught.value.attempts == 1
    assert fake_judge.request_count == 1


def test_connection_refused_is_transient(fake_judge):
    client = make_client(fake_judge, base_url=f"http://127.0.0.1:{free_port()}/v1", max_retries=1)
    try:
        with pytest.raises(TransientJudgeError):
            client.judge(PROMPT)
    finally:
        client.close()


@pytest.mark.parametrize("failure", ["garbage", "badscore", "html"])
def test_an_unparseable_verdict_is_a_failure_that_still_cost_money(fake_judge, judge_client, failure):
    fake_judge.script([failure])
    with pytest.raises(InvalidVerdict) as caught:
        judge_client.judge(PROMPT)
    if failure != "html":  # a body without usage cannot be priced
        assert caught.value.cost_usd == pytest.approx(COST_PER_CALL)
    assert fake_judge.request_count == 1  # not a transient error: no retry


def test_a_fenced_verdict_is_accepted(fake_judge, judge_client):
    fake_judge.script(["fenced"])
    assert judge_client.judge(PROMPT).score == 4


@pytest.mark.parametrize("reply", [
    '{"score": 4}',
    '{"score": 4, "reason": "ok", "confidence": 0.9}',
    '{"score": 4.0, "reason": "ok"}',
    '{"score": "4", "reason": "ok"}',
    '{"score": true, "reason": "ok"}',
    '{"score": 0, "reason": "ok"}',
    '{"score": 6, "reason": "ok"}',
    '{"score": 4, "reason": "  "}',
    '{"score": 4, "reason": "ok", "score": 5}',
    '[4, "ok"]',
    'Score: 4. {"score": 4, "reason": "ok"}',
    "",
])
def test_verdicts_are_parsed_strictly(reply):
    with pytest.raises(InvalidVerdict):
        parse_verdict(reply)


def test_a_valid_verdict_is_normalised():
    assert parse_verdict(' {"reason": "good\\n but  long", "score": 5} ') == (5, "good but long")
    assert parse_verdict('```json\n{"score": 2, "reason": "x"}\n```') == (2, "x")


def test_breaker_opens_after_consecutive_failures_and_recovers(fake_judge):
    now = [1000.0]
    breaker = CircuitBreaker(failure_threshold=3, cooldown_s=30.0, clock=lambda: now[0])
    client = make_client(fake_judge, breaker=breaker)
    try:
        fake_judge.script(["400"] * 3)
        for _ in range(3):
            with pytest.raises(JudgeRejected):
                client.judge(PROMPT)
        assert breaker.state == "open"

        with pytest.raises(CircuitOpen):
            client.judge(PROMPT)
        assert fake_judge.request_count == 3  # the open breaker did not call the judge

        now[0] += 30.0
        assert breaker.state == "half_open"
        fake_judge.script(["500", "500", "500", "500"])  # the trial call fails: open again
        with pytest.raises(TransientJudgeError):
            client.judge(PROMPT)
        assert breaker.state == "open"
        with pytest.raises(CircuitOpen):
            client.judge(PROMPT)

        now[0] += 30.0
        assert client.judge(PROMPT).score == 4  # the trial call succeeds: closed
        assert breaker.state == "closed"
        assert client.judge(PROMPT).score == 4
    finally:
        client.close()


def test_half_open_lets_one_trial_through_at_a_time():
    now = [0.0]
    breaker = CircuitBreaker(failure_threshold=1, cooldown_s=5.0, clock=lambda: now[0])
    breaker.record_failure()
    assert not breaker.allow()
    now[0] = 5.0
    assert breaker.allow()
    assert not breaker.allow()
    breaker.record_success()
    assert breaker.allow() and breaker.allow()


def test_each_judge_attempt_is_an_llm_span_on_the_judge_route(fake_judge):
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "judge-test"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sdk.init(service_name="judge-test", tracer_provider=provider, export=False)
    client = make_client(fake_judge, sleep=lambda s: None)
    try:
        fake_judge.script(["429"])
        client.judge(PROMPT)
    finally:
        client.close()
        sdk.shutdown()

    spans = exporter.get_finished_spans()
    assert len(spans) == 2
    failed, ok = spans
    assert failed.attributes["infersight.error.class"] == "transient"
    assert ok.attributes["infersight.retry.attempt"] == 1
    for span in spans:
        assert span.attributes["infersight.route"] == "infersight.judge"
        assert span.attributes["gen_ai.request.model"] == "fake-judge"
    assert ok.attributes["gen_ai.usage.input_tokens"] == 1000
    assert ok.attributes["gen_ai.usage.output_tokens"] == 50


def test_base_url_forms():
    assert chat_completions_url("http://localhost:8000") == "http://localhost:8000/v1/chat/completions"
    assert chat_completions_url("https://api.openai.com/v1/") == "https://api.openai.com/v1/chat/completions"
    assert chat_completions_url("http://gw/openai/v1") == "http://gw/openai/v1/chat/completions"
    with pytest.raises(ValueError, match="base_url"):
        chat_completions_url("localhost:8000")


def test_a_process_that_never_set_the_sdk_up_judges_without_the_before_init_warning(
    fake_judge, judge_client, caplog, monkeypatch
):
    # The collector judges without init(): its judge calls are not traced and say nothing about it.
    from infersight.sdk import _lifecycle

    monkeypatch.setattr(_lifecycle, "_warned_before_init", False)  # warned once per process: not yet
    if sdk.initialised():
        sdk.shutdown()
    assert not sdk.initialised()
    with caplog.at_level("WARNING", logger="infersight.sdk"):
        assert judge_client.judge(PROMPT).score == 4
    assert not [r for r in caplog.records if "before infersight.sdk.init" in r.getMessage()]
