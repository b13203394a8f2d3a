"""What each kind of span records when its call ends: LLM usage, cost, latency anatomy, content;
retrieval hits and score stats; rerank candidate counts and time per candidate."""

from __future__ import annotations

import json
from typing import Any

from . import _setup, semconv
from ._content import input_messages, messages_json, output_text, retrieval_content
from ._estimate import estimate_tokens
from ._inputs import arguments_messages, request_messages, request_of_error, request_of_result
from ._lifecycle import Call
from ._pricing import ModelRates, lookup_rates, priceable
from ._streams import StreamStats
from ._usage import Usage, _get, extract_usage

_MAX_SCHEMA_CHARS = 16_384

# The hooks fill one dict that is set with one call (the SDK span takes a lock per
# set_attribute), or merged on the export thread when the work is deferred.


def llm_result(call: Call, result: Any, out: dict[str, Any]) -> None:
    _record_llm(call, out, extract_usage(result), lambda: output_text(result))


def llm_stream(call: Call, stats: StreamStats, out: dict[str, Any]) -> None:
    out[semconv.STREAM_CHUNKS] = stats.chunks
    if stats.loop_unit is not None:
        out[semconv.STREAM_GUARD_STOPPED] = True
        out[semconv.STREAM_LOOP_UNIT] = stats.loop_unit
    if stats.first_ns is not None:
        ttft = call.ttft_s = call.elapsed_s(stats.first_ns)
        out[semconv.TTFT_S] = ttft
        gaps = sorted(stats.gaps_ns)
        if gaps:
            out[semconv.ITL_P50_S] = _quantile(gaps, 0.5) / 1e9
            out[semconv.ITL_P95_S] = _quantile(gaps, 0.95) / 1e9
            out[semconv.ITL_MAX_S] = gaps[-1] / 1e9
            threshold_ns = _setup.options().stall_threshold_s * 1e9
            out[semconv.ITL_STALLS] = sum(1 for g in gaps if g > threshold_ns)
    _record_llm(call, out, stats.usage, lambda: "".join(stats.text), stats)


def _quantile(sorted_values: list[int], q: float) -> float:
    # Nearest-rank: a real observed gap, never an interpolated one.
    index = min(len(sorted_values) - 1, max(0, int(q * len(sorted_values) + 0.999999) - 1))
    return float(sorted_values[index])


def _record_llm(
    call: Call, out: dict[str, Any], usage: Usage, text_of: Any, stats: StreamStats | None = None
) -> None:
    opts = _setup.options()
    text: str | None = None
    if opts.capture_content or (usage.input_tokens is None and usage.output_tokens is None):
        text = text_of()
    if usage.input_tokens is None and usage.output_tokens is None:
        _estimate(call, out, usage, text)
    _set_usage(out, usage)
    call.response_model = usage.response_model
    call.input_tokens, call.output_tokens = usage.input_tokens, usage.output_tokens
    _set_cost(call, out, usage, opts.price_overrides)
    _set_queue_and_prefill(call, out, stats, usage)
    if opts.capture_content:
        _set_content(call, out, text, usage, opts)
    _set_output_type(call, out)


def _set_output_type(call: Call, out: dict[str, Any]) -> None:
    """Mark JSON answers (``expect_json=True`` or a JSON ``response_format``) for the JSON detector."""
    fmt = call.kwargs.get("response_format")
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    kind = kind if isinstance(kind, str) else None
    if call.spec.expect_json or kind in ("json_object", "json_schema"):
        out[semconv.OUTPUT_TYPE] = "json"
    if kind == "json_schema" and isinstance(fmt, dict):  # kind is set only for a dict fmt
        schema = (fmt.get("json_schema") or {}).get("schema")
        if isinstance(schema, dict):
            try:
                text = json.dumps(schema, separators=(",", ":"))
            except (TypeError, ValueError):
                return
            if len(text) <= _MAX_SCHEMA_CHARS:
                out[semconv.JSON_SCHEMA] = text


def _estimate(call: Call, out: dict[str, Any], usage: Usage, text: str | None) -> None:
    messages = input_messages(call.kwargs)
    prompt = "\n".join(p["content"] for m in messages or () for p in m["parts"])
    if not prompt and not text:
        return
    usage.input_tokens = estimate_tokens(prompt) if prompt else None
    usage.output_tokens = estimate_tokens(text) if text else None
    out[semconv.USAGE_ESTIMATED] = True


def _set_usage(out: dict[str, Any], usage: Usage) -> None:
    if usage.response_model:
        out[semconv.RESPONSE_MODEL] = usage.response_model
    if usage.response_id:
        out[semconv.RESPONSE_ID] = usage.response_id
    if usage.finish_reasons:
        out[semconv.FINISH_REASONS] = list(usage.finish_reasons)
    if usage.input_tokens is not None:
        out[semconv.INPUT_TOKENS] = usage.input_tokens
    if usage.output_tokens is not None:
        out[semconv.OUTPUT_TOKENS] = usage.output_tokens
    if usage.cache_read_tokens:
        out[semconv.CACHE_READ_TOKENS] = usage.cache_read_tokens
    if usage.cache_creation_tokens:
        out[semconv.CACHE_CREATION_TOKENS] = usage.cache_creation_tokens
    if usage.reasoning_tokens:
        out[semconv.REASONING_TOKENS] = usage.reasoning_tokens


def _set_cost(call: Call, out: dict[str, Any], usage: Usage, overrides: dict[str, ModelRates]) -> None:
    if not priceable(usage.input_tokens):  # half an estimate: unknown, not its output's price
        return
    rates = None
    for model in (usage.response_model, call.model):
        if model:
            rates = overrides.get(model) or lookup_rates(call.spec.provider, model)
            if rates is not None:
                break
    if rates is None:
        out[semconv.COST_UNKNOWN_MODEL] = True
        return
    out[semconv.COST_USD] = rates.cost_usd(
        usage.input_tokens or 0, usage.output_tokens or 0, usage.cache_read_tokens, usage.cache_creation_tokens
    )
    out[semconv.COST_SOURCE] = rates.source


def _set_queue_and_prefill(call: Call, out: dict[str, Any], stats: StreamStats | None, usage: Usage) -> None:
    if call.queue_wait is not None:
        out[semconv.QUEUE_WAIT_S] = call.queue_wait
        out[semconv.QUEUE_SOURCE] = call.queue_source or ""
    if stats is None or stats.first_ns is None:
        return
    ttft = call.elapsed_s(stats.first_ns)
    # A provider-reported queue wait happened inside the call, so inside TTFT; an app-side wait
    # (queued_at, mark_started) happened before the call started.
    inside = call.queue_wait if call.queue_source == "response" else 0.0
    out[semconv.PREFILL_S] = max(ttft - (inside or 0.0), 0.0)
    if usage.output_tokens and usage.output_tokens > 1:
        decode_s = (stats.last_ns - stats.first_ns) / 1e9
        out[semconv.TPOT_S] = decode_s / (usage.output_tokens - 1)


def llm_error(call: Call, error: BaseException, out: dict[str, Any]) -> None:
    """A failed call keeps its prompt: on-call reads exactly these spans."""
    if _setup.options().capture_content:
        _set_input(call, out, error)


def _set_input(
    call: Call, out: dict[str, Any], error: BaseException | None = None, opts: _setup.Options | None = None
) -> bool:
    """The prompt: the call's ``messages=`` (or ``input=``, ...), else the provider request's body
    (from the error, the stream or the response), else the function's arguments (see _inputs);
    returns whether it was truncated."""
    opts = opts or _setup.options()
    messages = input_messages(call.kwargs)
    if not messages:
        if error is not None:
            request = request_of_error(error)
        else:
            request = call.request if call.request is not None else request_of_result(call.result)
        messages = request_messages(request)
        source = "request"
        if not messages:
            messages = arguments_messages(call.spec.positional, call.spec.rest, call.args, call.kwargs,
                                          opts.max_content_chars)
            source = "arguments"
        if not messages:
            return False
        out[semconv.INPUT_SOURCE] = source
    out[semconv.INPUT_MESSAGES], truncated = messages_json(messages, opts.redactors, opts.max_content_chars)
    if truncated:
        out[semconv.CONTENT_TRUNCATED] = True
    return truncated


def _set_content(call: Call, out: dict[str, Any], text: str | None, usage: Usage, opts: _setup.Options) -> None:
    truncated = _set_input(call, out, None, opts)
    if text:
        output: list[dict[str, Any]] = [{"role": "assistant", "parts": [{"type": "text", "content": text}]}]
        if usage.finish_reasons:
            output[0]["finish_reason"] = usage.finish_reasons[0]
        out[semconv.OUTPUT_MESSAGES], cut = messages_json(output, opts.redactors, opts.max_content_chars)
        truncated = truncated or cut
    if truncated:
        out[semconv.CONTENT_TRUNCATED] = True


def retrieval_result(call: Call, result: Any, out: dict[str, Any]) -> None:
    top_k = call.kwargs.get("top_k", call.kwargs.get("k"))
    if isinstance(top_k, int) and semconv.TOP_K not in call.spec.attributes:
        out[semconv.TOP_K] = top_k
    if isinstance(result, (list, tuple)):
        out[semconv.RETRIEVAL_RETURNED] = len(result)
        scores = [s for s in (_score(item) for item in result) if s is not None]
        if scores:
            out[semconv.RETRIEVAL_SCORE_MAX] = max(scores)
            out[semconv.RETRIEVAL_SCORE_MIN] = min(scores)
            out[semconv.RETRIEVAL_SCORE_MEAN] = sum(scores) / len(scores)
    opts = _setup.options()
    if opts.capture_content:
        retrieval_content(call.kwargs, result, out, opts.redactors, opts.max_content_chars)


def _score(item: Any) -> float | None:
    score = _get(item, "score")
    if score is None and isinstance(item, tuple) and len(item) == 2:
        score = item[1]  # (document, score) pairs, as LangChain's similarity_search_with_score returns
    return float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None


def rerank_result(call: Call, result: Any, out: dict[str, Any]) -> None:
    candidates = None
    for name in ("documents", "candidates", "docs"):
        value = call.kwargs.get(name)
        if isinstance(value, (list, tuple)):
            candidates = len(value)
            out[semconv.RERANK_CANDIDATES] = candidates
            break
    if isinstance(result, (list, tuple)):
        out[semconv.RERANK_RETURNED] = len(result)
    if candidates:
        out[semconv.RERANK_S_PER_CANDIDATE] = call.elapsed_s(call.end_ns) / candidates
