"""Usage and timing from the objects the real openai and anthropic clients return, talking HTTP
(JSON and server-sent events) to a local server that speaks their APIs."""

from __future__ import annotations

import asyncio
import json

import anthropic
import openai
import pytest
from genai_prices import Usage, calc_price

from infersight import sdk
from infersight.demo import FakeLLM

MESSAGES = [{"role": "user", "content": "Where is my invoice? Mail me at jane.doe@example.com"}]


@pytest.fixture(scope="module")
def llm():
    server = FakeLLM(latency_s=(0.08, 0.08), stream_chunk_delay_s=0.01).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def failing_llm():
    server = FakeLLM(latency_s=(0, 0), error_rate=1.0).start()
    yield server
    server.stop()


def one(spans):
    (span,) = spans.get_finished_spans()
    return span.attributes


def price(model, provider, i, o):
    return float(calc_price(Usage(input_tokens=i, output_tokens=o), model, provider_id=provider).total_price)


def test_openai_chat_completion(spans, llm):
    client = openai.OpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0)

    @sdk.traced_llm(provider="openai")
    def ask(model, messages):
        return client.chat.completions.create(model=model, messages=messages)

    response = ask("gpt-4o-mini", MESSAGES)
    a = one(spans)
    assert a["gen_ai.usage.input_tokens"] == response.usage.prompt_tokens
    assert a["gen_ai.usage.output_tokens"] == response.usage.completion_tokens
    assert a["infersight.cost.usd"] == pytest.approx(
        price("gpt-4o-mini", "openai", response.usage.prompt_tokens, response.usage.completion_tokens)
    )
    assert tuple(a["gen_ai.response.finish_reasons"]) == ("stop",)
    assert a["gen_ai.response.id"] == response.id  # what proves another instrumentation's span is this call
    inputs = json.loads(a["gen_ai.input.messages"])
    assert "[EMAIL]" in inputs[0]["parts"][0]["content"]  # redacted before export
    assert "jane.doe" not in a["gen_ai.input.messages"]
    output = json.loads(a["gen_ai.output.messages"])[0]["parts"][0]["content"]
    assert output == response.choices[0].message.content


def test_openai_stream_with_include_usage(spans, llm):
    client = openai.OpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0)

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def ask():
        return client.chat.completions.create(
            model="gpt-4o-mini", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )

    text = ""
    usage = None
    with ask() as stream:
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                text += chunk.choices[0].delta.content
            usage = chunk.usage or usage
            response_id = chunk.id
    a = one(spans)
    assert a["gen_ai.response.id"] == response_id
    assert a["gen_ai.usage.output_tokens"] == usage.completion_tokens
    assert a["gen_ai.usage.input_tokens"] == usage.prompt_tokens
    assert "infersight.usage.estimated" not in a
    assert 0.07 <= a["gen_ai.response.time_to_first_chunk"] < 1.0
    assert 0.005 <= a["infersight.itl.p50_s"] < 0.2
    assert a["infersight.tpot_s"] > 0
    assert json.loads(a["gen_ai.output.messages"])[0]["parts"][0]["content"] == text
    assert "infersight.stream.aborted" not in a


def test_openai_stream_abandoned_after_three_chunks(spans, llm):
    client = openai.OpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0)

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def ask():
        return client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)

    stream = ask()
    for i, _ in enumerate(stream):
        if i == 2:
            break
    stream.close()
    a = one(spans)
    assert a["infersight.stream.aborted"] is True
    assert a["infersight.stream.chunks"] == 3


def test_async_openai_stream(spans, llm):
    client = openai.AsyncOpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0)

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    async def ask():
        return await client.chat.completions.create(
            model="gpt-4o-mini", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )

    async def main():
        stream = await ask()
        return [c async for c in stream]

    chunks = asyncio.run(main())
    a = one(spans)
    assert a["gen_ai.usage.output_tokens"] == chunks[-1].usage.completion_tokens
    assert a["gen_ai.response.time_to_first_chunk"] >= 0.07


def test_anthropic_message(spans, llm):
    client = anthropic.Anthropic(base_url=llm.url, api_key="test", max_retries=0)

    @sdk.traced_llm(provider="anthropic", model="claude-3-5-haiku-latest")
    def ask():
        return client.messages.create(model="claude-3-5-haiku-latest", max_tokens=200, messages=MESSAGES)

    response = ask()
    a = one(spans)
    assert a["gen_ai.usage.input_tokens"] == response.usage.input_tokens
    assert a["gen_ai.usage.output_tokens"] == response.usage.output_tokens
    assert tuple(a["gen_ai.response.finish_reasons"]) == ("end_turn",)
    assert a["gen_ai.response.id"] == response.id
    assert a["infersight.cost.usd"] == pytest.approx(
        price("claude-3-5-haiku-latest", "anthropic", response.usage.input_tokens, response.usage.output_tokens)
    )


def test_anthropic_stream_usage_from_message_delta(spans, llm):
    client = anthropic.Anthropic(base_url=llm.url, api_key="test", max_retries=0)

    @sdk.traced_llm(provider="anthropic", model="claude-3-5-haiku-latest")
    def ask():
        return client.messages.create(model="claude-3-5-haiku-latest", max_tokens=200, messages=MESSAGES, stream=True)

    events = list(ask())
    delta = next(e for e in events if e.type == "message_delta")
    start = next(e for e in events if e.type == "message_start")
    a = one(spans)
    assert a["gen_ai.usage.output_tokens"] == delta.usage.output_tokens
    assert a["gen_ai.usage.input_tokens"] == start.message.usage.input_tokens
    assert a["gen_ai.response.id"] == start.message.id
    assert tuple(a["gen_ai.response.finish_reasons"]) == ("end_turn",)
    assert a["gen_ai.response.time_to_first_chunk"] >= 0.07


def test_rate_limit_from_the_real_client_is_transient(spans, failing_llm):
    client = openai.OpenAI(base_url=failing_llm.url + "/v1", api_key="test", max_retries=0)

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def ask():
        return client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)

    with pytest.raises(openai.RateLimitError):
        ask()
    a = one(spans)
    assert a["error.type"] == "RateLimitError"
    assert a["infersight.error.class"] == "transient"
