"""The ingest normaliser and the nested-call marker on hand-built ``otel_traces`` rows."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infersight.collector.ingest._nesting import _Recent, mark_same_calls
from infersight.collector.ingest._normalize import normalize
from infersight.sdk import semconv

T0 = 1_700_000_000 * 10**9


def ts(ns: int) -> str:
    return f"{ns // 10**9:010d}.{ns % 10**9:09d}"


def row(attrs: dict[str, str], *, span: str = "a1", parent: str = "", start: int = T0, duration: int = 10**9,
        scope: str = "s", status: str = "Unset", events: tuple[tuple[str, int, dict[str, str]], ...] | list = ()
        ) -> dict[str, Any]:
    return {
        "Timestamp": ts(start), "TraceId": "t1", "SpanId": span, "ParentSpanId": parent, "ScopeName": scope,
        "SpanAttributes": dict(attrs), "Duration": duration, "StatusCode": status,
        "Events.Name": [e[0] for e in events], "Events.Timestamp": [ts(e[1]) for e in events],
        "Events.Attributes": [e[2] for e in events],
    }


OPENINFERENCE = {
    "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini", "llm.system": "openai",
    "llm.token_count.prompt": "9", "llm.token_count.completion": "24", "llm.finish_reason": "stop",
    "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": "be brief",
    "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": "hi",
    "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "hello",
    "user.id": "u-1", "session.id": "s-1",
}


def test_openinference_gets_every_canonical_name_and_keeps_its_own():
    r = row(OPENINFERENCE, events=[("First Token Stream Event", T0 + 250_000_000, {})])
    normalize(r)
    a = r["SpanAttributes"]
    assert {k: a[k] for k in OPENINFERENCE} == OPENINFERENCE  # nothing removed or overwritten
    assert a["gen_ai.operation.name"] == "chat"
    assert (a["gen_ai.request.model"], a["gen_ai.provider.name"]) == ("gpt-4o-mini", "openai")
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == ("9", "24")
    assert json.loads(a["gen_ai.response.finish_reasons"]) == ["stop"]
    assert float(a["gen_ai.response.time_to_first_chunk"]) == 0.25
    assert (a["infersight.user.id"], a["gen_ai.conversation.id"]) == ("u-1", "s-1")
    assert json.loads(a["gen_ai.input.messages"]) == [
        {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
    ]
    assert json.loads(a["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "hello"}], "finish_reason": "stop"},
    ]


def test_openllmetry_prompts_completions_first_chunk_and_association_properties():
    r = row({
        "llm.request.type": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": "hi", "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": "yo", "gen_ai.completion.0.finish_reason": "length",
        "traceloop.association.properties.user_id": "u-2", "traceloop.association.properties.session_id": "s-2",
    }, events=[("gen_ai.content.completion.chunk", T0 + 10**8, {}),
               ("gen_ai.content.completion.chunk", T0 + 2 * 10**8, {})])
    normalize(r)
    a = r["SpanAttributes"]
    assert float(a["gen_ai.response.time_to_first_chunk"]) == 0.1  # the first chunk, not the last
    assert json.loads(a["gen_ai.response.finish_reasons"]) == ["length"]
    assert json.loads(a["gen_ai.output.messages"])[0]["parts"][0]["content"] == "yo"
    assert (a["infersight.user.id"], a["gen_ai.conversation.id"]) == ("u-2", "s-2")


def test_error_types_become_the_short_class_name_and_get_a_class():
    repr_typed = row({"gen_ai.operation.name": "chat", "error.type": "<class 'openai.InternalServerError'>"},
                     status="Error")
    normalize(repr_typed)
    a = repr_typed["SpanAttributes"]
    assert a["error.type"] == "InternalServerError"
    assert a["infersight.error.type.original"] == "<class 'openai.InternalServerError'>"
    assert a["infersight.error.class"] == "transient"
    from_event = row({"openinference.span.kind": "LLM"}, status="Error",
                     events=[("exception", T0, {"exception.type": "openai.BadRequestError"})])
    normalize(from_event)
    assert from_event["SpanAttributes"]["error.type"] == "BadRequestError"
    assert from_event["SpanAttributes"]["infersight.error.class"] == "logic"
    sdk = row({"gen_ai.operation.name": "chat", "error.type": "RateLimitError", "infersight.error.class": "transient"},
              status="Error")
    before = dict(sdk["SpanAttributes"])
    normalize(sdk)
    assert sdk["SpanAttributes"] == before  # the SDK's own spans are already canonical


def test_canonical_names_are_never_overwritten_and_other_spans_get_no_messages():
    r = row({**OPENINFERENCE, "gen_ai.request.model": "mine", "gen_ai.usage.input_tokens": "1"})
    normalize(r)
    a = r["SpanAttributes"]
    assert (a["gen_ai.request.model"], a["gen_ai.usage.input_tokens"]) == ("mine", "1")
    chain = row({"openinference.span.kind": "CHAIN", "input.value": "question", "output.value": "answer"})
    normalize(chain)
    assert "gen_ai.operation.name" not in chain["SpanAttributes"]
    assert "gen_ai.output.messages" not in chain["SpanAttributes"]


def test_plain_text_values_are_messages_json_ones_are_not():
    text = row({"openinference.span.kind": "LLM", "input.value": "q", "output.value": "a"})
    normalize(text)
    assert json.loads(text["SpanAttributes"]["gen_ai.output.messages"])[0]["parts"][0]["content"] == "a"
    js = row({"openinference.span.kind": "LLM", "output.value": "{}", "output.mime_type": "application/json"})
    normalize(js)
    assert "gen_ai.output.messages" not in js["SpanAttributes"]


def llm(span: str, *, parent: str = "", start: int = T0, duration: int = 10**9, scope: str = "s",
        status: str = "Unset", **attrs: str):
    r = row({"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", **attrs}, span=span, parent=parent,
            start=start, duration=duration, scope=scope, status=status)
    return r


def test_a_child_llm_span_is_the_call_and_its_parent_gives_the_attribution():
    outer = llm("o", **{"infersight.user.id": "u", "infersight.tenant.id": "acme"})
    inner = llm("i", parent="o", start=T0 + 1, duration=10**8, **{"gen_ai.usage.input_tokens": "5"})
    mark_same_calls([inner, outer], _Recent(16))
    assert outer["SpanAttributes"][semconv.SAME_CALL_AS] == "i"
    assert semconv.SAME_CALL_AS not in inner["SpanAttributes"]
    a = inner["SpanAttributes"]
    assert (a["infersight.user.id"], a["infersight.tenant.id"]) == ("u", "acme")


USAGE = {"gen_ai.usage.input_tokens": "12", "gen_ai.usage.output_tokens": "30"}


def marks(*rows: dict[str, Any]) -> list[str | None]:
    mark_same_calls(list(rows), _Recent(16))
    return [r["SpanAttributes"].get(semconv.SAME_CALL_AS) for r in rows]


def test_a_sibling_inside_another_instrumentations_span_is_the_same_call_on_evidence():
    framework = llm("f", parent="r", scope="langchain", **USAGE)
    client = llm("c", parent="r", start=T0 + 10, duration=10**8, scope="openai", **USAGE)
    assert marks(framework, client) == ["c", None]


def test_time_and_model_alone_never_pair_siblings():
    # a call beside another instrumentation's concurrent call of the same model, or of no model
    # (a failed OpenInference call records none): two calls
    assert marks(llm("f", parent="r", scope="langchain"),
                 llm("c", parent="r", start=T0 + 10, duration=10**8, scope="openai")) == [None, None]
    ours = llm("o", parent="r", scope="infersight.sdk", **USAGE)
    failed = row({"gen_ai.operation.name": "chat"}, span="x", parent="r", start=T0 + 10, duration=10**8,
                 scope="openinference", status="Error")
    assert marks(ours, failed) == [None, None]


@pytest.mark.parametrize("differs", [
    {"gen_ai.usage.output_tokens": "31"}, {"gen_ai.request.model": "other"}, {"gen_ai.response.id": "r-2"},
    {"gen_ai.input.messages": '[{"role": "user", "content": "bye"}]'},
])
def test_anything_both_spans_know_and_that_differs_means_two_calls(differs):
    same = {**USAGE, "gen_ai.response.id": "r-1", "gen_ai.input.messages": '[{"role": "user", "content": "hi"}]'}
    framework = llm("f", parent="r", scope="langchain", **same)
    client = llm("c", parent="r", start=T0 + 10, duration=10**8, scope="openai", **{**same, **differs})
    assert marks(framework, client) == [None, None]


def test_a_failed_call_pairs_on_its_prompt_and_never_with_a_success():
    prompt = {"gen_ai.input.messages": '[{"role": "user", "content": "hi"}]'}
    failed_outer = row({"gen_ai.operation.name": "chat", **prompt}, span="f", parent="r", scope="langchain",
                       status="Error")
    failed_inner = row({"gen_ai.operation.name": "chat", **prompt}, span="c", parent="r", start=T0 + 10,
                       duration=10**8, scope="openai", status="Error")
    assert marks(failed_outer, failed_inner) == ["c", None]
    ok_inner = llm("k", parent="r", start=T0 + 10, duration=10**8, scope="openai", **prompt)
    assert marks(llm("g", parent="r", scope="langchain", status="Error", **prompt), ok_inner) == [None, None]


def test_a_response_id_proves_it_alone_and_usage_needs_the_ends_close():
    far = {"start": T0 + 10, "duration": 10**8}  # ends 0.9 s before the outer span
    assert marks(llm("f", parent="r", scope="langchain", duration=10 * 10**9, **{"gen_ai.response.id": "r-1"}),
                 llm("c", parent="r", scope="openai", **far, **{"gen_ai.response.id": "r-1"})) == ["c", None]
    assert marks(llm("f", parent="r", scope="langchain", duration=10 * 10**9, **USAGE),
                 llm("c", parent="r", scope="openai", **far, **USAGE)) == [None, None]


def test_openinference_response_ids_are_read_from_the_client_and_the_langchain_output():
    client = {"output.mime_type": "application/json", "output.value": '{"id": "chatcmpl-7", "choices": []}'}
    framework = {"output.mime_type": "application/json",
                 "output.value": '{"generations": [], "llm_output": {"id": "chatcmpl-7"}}'}
    far = {"start": T0 + 10, "duration": 10**8}
    assert marks(llm("f", parent="r", scope="langchain", duration=10 * 10**9, **framework),
                 llm("c", parent="r", scope="openai", **far, **client)) == ["c", None]
    other = {**client, "output.value": '{"id": "chatcmpl-8"}'}
    assert marks(llm("f", parent="r", scope="langchain", **framework, **USAGE),
                 llm("c", parent="r", scope="openai", **far, **other, **USAGE)) == [None, None]


def test_two_candidates_are_a_guess_and_pair_nothing():
    framework = llm("f", parent="r", scope="langchain", **USAGE)
    one = llm("c1", parent="r", start=T0 + 10, duration=10**8, scope="openai", **USAGE)
    two = llm("c2", parent="r", start=T0 + 20, duration=10**8, scope="openai", **USAGE)
    assert marks(framework, one, two) == [None, None, None]


def test_three_instrumentations_of_one_call_are_a_chain_down_to_the_innermost():
    ids = {"gen_ai.response.id": "r-1"}
    framework = llm("f", parent="r", scope="langchain", **ids)
    client = llm("c", parent="r", start=T0 + 10, duration=10**8, scope="openinference", **ids)
    semconv = llm("s", parent="r", start=T0 + 20, duration=10**7, scope="openai-v2", **ids)
    framework_mark, client_mark, semconv_mark = marks(framework, client, semconv)
    assert framework_mark in ("c", "s") and client_mark == "s" and semconv_mark is None


def test_concurrent_calls_of_one_instrumentation_are_not_the_same_call():
    a = llm("a", parent="r", scope="openai")
    b = llm("b", parent="r", start=T0 + 10, duration=10**8, scope="openai")
    mark_same_calls([a, b], _Recent(16))
    assert semconv.SAME_CALL_AS not in a["SpanAttributes"] and semconv.SAME_CALL_AS not in b["SpanAttributes"]


def test_a_pair_split_across_requests_is_recognised_in_either_order():
    recent = _Recent(16)
    inner, outer = llm("i", parent="o", duration=10), llm("o")
    mark_same_calls([inner], recent)  # inner spans end, so are exported, first
    mark_same_calls([outer], recent)
    assert outer["SpanAttributes"][semconv.SAME_CALL_AS] == "i" and semconv.SAME_CALL_AS not in inner["SpanAttributes"]
    recent = _Recent(16)
    outer, inner = llm("o"), llm("i", parent="o", duration=10)
    mark_same_calls([outer], recent)  # the outer one is stored already: the inner one is left out
    mark_same_calls([inner], recent)
    assert inner["SpanAttributes"][semconv.SAME_CALL_AS] == "o" and semconv.SAME_CALL_AS not in outer["SpanAttributes"]


def test_spans_the_sdk_marked_and_other_kinds_are_left_alone():
    sdk_span = llm("o", scope="infersight.sdk")
    provider_span = llm("i", parent="o", **{"infersight.parent_llm_span": "o"})
    retrieval = row({"gen_ai.operation.name": "retrieval"}, span="r", parent="o")
    mark_same_calls([sdk_span, provider_span, retrieval], _Recent(16))
    for r in (sdk_span, provider_span, retrieval):
        assert semconv.SAME_CALL_AS not in r["SpanAttributes"]


def test_the_memory_is_bounded_and_forgets_the_oldest_traces():
    recent = _Recent(4)
    for i in range(10):
        r = llm(f"s{i}")
        r["TraceId"] = f"t{i}"
        mark_same_calls([r], recent)
    remembered = recent.of_traces(("", f"t{i}") for i in range(10))  # rows without a project
    assert [len(remembered.get(("", f"t{i}"), [])) for i in range(10)] == [0] * 6 + [1] * 4


def test_a_bulk_load_of_one_trace_is_linear():
    rows = [llm(f"{i:016x}") for i in range(40_000)]  # one trace, one parent, one scope: 1.6e9 pairs if compared
    mark_same_calls(rows, _Recent(16))
    assert not any(semconv.SAME_CALL_AS in r["SpanAttributes"] for r in rows)


def test_openinference_invocation_parameters_give_the_output_type_schema_tools_and_sampling():
    schema = {"type": "object", "required": ["priority"], "properties": {"priority": {"type": "integer"}}}
    params = {"model": "gpt-4o-mini", "temperature": 0.2, "max_completion_tokens": 64, "stop": "END",
              "response_format": {"type": "json_schema", "json_schema": {"name": "ticket", "schema": schema}}}
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    attrs = {**OPENINFERENCE, "llm.invocation_parameters": json.dumps(params),
             "llm.tools.0.tool.json_schema": json.dumps(tool)}
    r = row(attrs)
    normalize(r)
    a = r["SpanAttributes"]
    assert {k: a[k] for k in attrs} == attrs  # originals kept
    assert a["gen_ai.output.type"] == "json"
    assert json.loads(a["infersight.json_schema"]) == schema
    assert json.loads(a["gen_ai.tool.definitions"]) == [
        {"type": "function", "name": "lookup", "parameters": {"type": "object"}}]
    assert (a["gen_ai.request.temperature"], a["gen_ai.request.max_tokens"]) == ("0.2", "64")
    assert json.loads(a["gen_ai.request.stop_sequences"]) == ["END"]


def test_json_object_without_schema_and_text_formats():
    def normalized(params: dict[str, Any]) -> dict[str, str]:
        r = row({**OPENINFERENCE, "llm.invocation_parameters": json.dumps(params)})
        normalize(r)
        return r["SpanAttributes"]

    a = normalized({"response_format": {"type": "json_object"}, "tools": [
        {"type": "function", "function": {"name": "f"}}]})  # LangChain keeps tools in the parameters
    assert a["gen_ai.output.type"] == "json" and "infersight.json_schema" not in a
    assert json.loads(a["gen_ai.tool.definitions"]) == [{"type": "function", "name": "f"}]
    assert "gen_ai.output.type" not in normalized({"response_format": {"type": "text"}})
    r = row({**OPENINFERENCE, "llm.invocation_parameters": "{not json"})
    normalize(r)  # a broken value is left alone, never an error
    assert "gen_ai.output.type" not in r["SpanAttributes"]


def test_openllmetry_structured_output_schema_is_the_json_schema():
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    r = row({"gen_ai.operation.name": "chat", "gen_ai.request.structured_output_schema": json.dumps(schema)})
    normalize(r)
    assert r["SpanAttributes"]["gen_ai.output.type"] == "json"
    assert json.loads(r["SpanAttributes"]["infersight.json_schema"]) == schema


def test_finish_reasons_of_every_vocabulary_use_the_providers_names():
    # OpenLLMetry writes OpenAI's tool_calls / function_call as "tool_call", per choice (older)
    # or in the canonical list itself (newer: rewritten in place, the original kept).
    older = row({"llm.request.type": "chat", "gen_ai.completion.0.finish_reason": "tool_call",
                 "gen_ai.completion.1.finish_reason": "stop"})
    normalize(older)
    assert json.loads(older["SpanAttributes"]["gen_ai.response.finish_reasons"]) == ["tool_calls", "stop"]
    newer = row({"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": '["tool_call"]'})
    normalize(newer)
    a = newer["SpanAttributes"]
    assert json.loads(a["gen_ai.response.finish_reasons"]) == ["tool_calls"]
    assert a["infersight.finish_reasons.original"] == '["tool_call"]'
    plain = row({"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": '["tool_calls"]'})
    normalize(plain)
    assert "infersight.finish_reasons.original" not in plain["SpanAttributes"]


def test_a_parent_and_child_beside_a_sibling_pair_are_each_one_call():
    framework = llm("f", parent="r", scope="langchain", **USAGE)
    client = llm("c", parent="r", start=T0 + 10, duration=10**8, scope="openai", **USAGE)
    ours = llm("o", parent="r", start=T0 + 2 * 10**9, scope="infersight.sdk")
    provider = llm("p", parent="o", start=T0 + 2 * 10**9 + 10, duration=10**8, scope="anthropic")
    assert marks(framework, client, ours, provider) == ["c", None, "p", None]
