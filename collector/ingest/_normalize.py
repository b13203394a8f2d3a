"""One vocabulary for every reader: canonical attributes added to spans of other instrumentations.

The SDK writes the OpenTelemetry GenAI conventions plus ``infersight.*``; OpenInference
(``llm.*``, ``session.id``), OpenLLMetry (``gen_ai.prompt.N.*``, ``traceloop.association.*``)
and openai-v2 each write part of the same facts under other names, or only as span events. For
every span, :func:`normalize` ADDS the canonical name when it is absent, so the typed view, the
inline detectors, the trace view and the cost step read one vocabulary. Originals are kept:
nothing is removed, and the two values rewritten in place (an ``error.type`` spelled as a Python
class repr; finish reasons in OpenLLMetry's ``tool_call`` spelling) keep their originals under
``infersight.error.type.original`` and ``infersight.finish_reasons.original``. OpenInference's
``llm.invocation_parameters`` (one JSON string) gives the response format (``gen_ai.output.type``,
``infersight.json_schema``: what the JSON detector checks), tools and sampling parameters.

Runs in the decode workers for every span (see ``bench`` numbers in the module's tests): spans
that already speak the canonical vocabulary cost a few dictionary look-ups.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import orjson

from infersight.detectors import FINISH_REASON_SPELLINGS, row_time_ns
from infersight.sdk import classify_error, semconv

from ..store import LLM, kind_of, operation_of

# The same ceiling as the SDK's: a schema is read by the JSON detector for every answer.
MAX_SCHEMA_CHARS = 16_384

# canonical name <- the other vocabularies' names for it, first present wins
_ALIASES: dict[str, tuple[str, ...]] = {
    semconv.REQUEST_MODEL: (semconv.OPENINFERENCE_MODEL_NAME,),
    semconv.PROVIDER: (semconv.DEPRECATED_SYSTEM, semconv.OPENINFERENCE_PROVIDER, semconv.OPENINFERENCE_SYSTEM),
    semconv.INPUT_TOKENS: (
        semconv.DEPRECATED_PROMPT_TOKENS, semconv.OPENINFERENCE_PROMPT_TOKENS, semconv.OPENLLMETRY_PROMPT_TOKENS,
    ),
    semconv.OUTPUT_TOKENS: (
        semconv.DEPRECATED_COMPLETION_TOKENS, semconv.OPENINFERENCE_COMPLETION_TOKENS,
        semconv.OPENLLMETRY_COMPLETION_TOKENS,
    ),
    semconv.CACHE_READ_TOKENS: (semconv.OPENINFERENCE_CACHE_READ_TOKENS,),
    semconv.CACHE_CREATION_TOKENS: (semconv.OPENINFERENCE_CACHE_WRITE_TOKENS,),
    semconv.REASONING_TOKENS: (semconv.OPENINFERENCE_REASONING_TOKENS,),
    semconv.USER: (semconv.OPENINFERENCE_USER, semconv.OPENLLMETRY_USER),
    semconv.CONVERSATION_ID: (semconv.OPENINFERENCE_SESSION, semconv.OPENLLMETRY_SESSION),
}
# The first streamed chunk, as each package records it: OpenInference once, OpenLLMetry per chunk.
_FIRST_CHUNK_EVENTS = frozenset({
    "First Token Stream Event", "gen_ai.content.completion.chunk", "llm.content.completion.chunk",
})
_CLASS_REPR = re.compile(r"^<class '([\w.]+)'>$")
# Finish reasons as providers (and the SDK) write them: OpenLLMetry writes OpenAI's "tool_calls"
# and "function_call" as the output-message enum's "tool_call", so one question (how many answers
# asked for a tool) would otherwise have two answers.
_FINISH_REASON_ALIASES = FINISH_REASON_SPELLINGS
_SCALAR_PARAMETERS = {
    "temperature": semconv.REQUEST_TEMPERATURE, "top_p": semconv.REQUEST_TOP_P,
    "max_tokens": semconv.REQUEST_MAX_TOKENS, "max_completion_tokens": semconv.REQUEST_MAX_TOKENS,
    "seed": semconv.REQUEST_SEED, "frequency_penalty": semconv.REQUEST_FREQUENCY_PENALTY,
    "presence_penalty": semconv.REQUEST_PRESENCE_PENALTY,
}


def _first_message_keys(openinference: str, openllmetry: str, plain: str) -> tuple[str, ...]:
    # A span with none of these has no messages in another vocabulary: most spans (ours, and any
    # without content capture) skip building the indexed names below.
    first = f"{openinference}.0.message"
    return (f"{first}.role", f"{first}.content", f"{first}.contents.0.message_content.text",
            f"{openllmetry}.0.role", f"{openllmetry}.0.content", plain)


_FIRST_INPUT_KEYS = _first_message_keys("llm.input_messages", "gen_ai.prompt", "input.value")
_FIRST_OUTPUT_KEYS = _first_message_keys("llm.output_messages", "gen_ai.completion", "output.value")


def normalize(row: dict[str, Any]) -> None:
    """Add the canonical attributes to one ``otel_traces`` row (as ``to_rows`` builds it), in place."""
    attrs: dict[str, str] = row["SpanAttributes"]
    if semconv.OPERATION not in attrs and (operation := operation_of(attrs)):
        attrs[semconv.OPERATION] = operation
    for canonical, aliases in _ALIASES.items():
        if canonical not in attrs:
            for alias in aliases:
                value = attrs.get(alias)
                if value:
                    attrs[canonical] = value
                    break
    if semconv.FINISH_REASONS not in attrs:
        _add_finish_reasons(attrs)
    elif "_call" in attrs[semconv.FINISH_REASONS]:
        _canonical_finish_reasons(attrs)
    if row["StatusCode"] == "Error" or semconv.ERROR_TYPE in attrs:
        _add_error_type(attrs, row)
    if kind_of(attrs.get(semconv.OPERATION, "")) != LLM:
        return
    if semconv.TTFT_S not in attrs and row["Events.Name"]:
        _add_ttft(attrs, row)
    if semconv.OPENINFERENCE_INVOCATION_PARAMETERS in attrs:
        _add_invocation_parameters(attrs)
    if semconv.TOOL_DEFINITIONS not in attrs and "llm.tools.0.tool.json_schema" in attrs:
        _add_tool_definitions(attrs, _indexed_tools(attrs))
    if semconv.OUTPUT_TYPE not in attrs and (schema := attrs.get(semconv.OPENLLMETRY_STRUCTURED_OUTPUT_SCHEMA)):
        _add_output_type(attrs, {"type": "json_schema", "json_schema": {"schema": _loads(schema)}})
    if semconv.INPUT_MESSAGES not in attrs and any(key in attrs for key in _FIRST_INPUT_KEYS):
        _add_messages(attrs, semconv.INPUT_MESSAGES, ("llm.input_messages", "gen_ai.prompt"), "input", "user")
    if semconv.OUTPUT_MESSAGES not in attrs and any(key in attrs for key in _FIRST_OUTPUT_KEYS):
        _add_messages(
            attrs, semconv.OUTPUT_MESSAGES, ("llm.output_messages", "gen_ai.completion"), "output", "assistant"
        )


def _add_finish_reasons(attrs: dict[str, str]) -> None:
    # OpenInference: one string; older OpenLLMetry: per completion choice.
    reasons = [attrs[semconv.OPENINFERENCE_FINISH_REASON]] if attrs.get(semconv.OPENINFERENCE_FINISH_REASON) else []
    i = 0
    while reason := attrs.get(f"gen_ai.completion.{i}.finish_reason"):
        reasons.append(reason)
        i += 1
    if reasons:
        attrs[semconv.FINISH_REASONS] = orjson.dumps([_FINISH_REASON_ALIASES.get(r, r) for r in reasons]).decode()


def _canonical_finish_reasons(attrs: dict[str, str]) -> None:
    """Rewrite aliases in place (the list is the canonical attribute), keeping the original."""
    raw = attrs[semconv.FINISH_REASONS]
    reasons = _loads(raw)
    if not isinstance(reasons, list) or not any(r in _FINISH_REASON_ALIASES for r in reasons if isinstance(r, str)):
        return
    attrs[semconv.FINISH_REASONS_ORIGINAL] = raw
    attrs[semconv.FINISH_REASONS] = orjson.dumps(
        [_FINISH_REASON_ALIASES.get(r, r) if isinstance(r, str) else r for r in reasons]
    ).decode()


def finish_reasons_json(reasons: Sequence[str]) -> str:
    """``gen_ai.response.finish_reasons`` for ``reasons`` as any vocabulary writes them."""
    return orjson.dumps([_FINISH_REASON_ALIASES.get(r, r) for r in reasons]).decode()


def _add_invocation_parameters(attrs: dict[str, str]) -> None:
    """What OpenInference keeps in one JSON string: the response format (so the JSON detector
    checks the answer), tools, and the sampling parameters GenAI names one by one."""
    params = _loads(attrs[semconv.OPENINFERENCE_INVOCATION_PARAMETERS])
    if not isinstance(params, dict):
        return
    if semconv.OUTPUT_TYPE not in attrs and isinstance(fmt := params.get("response_format"), dict):
        _add_output_type(attrs, fmt)
    if semconv.TOOL_DEFINITIONS not in attrs and isinstance(tools := params.get("tools"), list):
        _add_tool_definitions(attrs, tools)
    for name, canonical in _SCALAR_PARAMETERS.items():
        value = params.get(name)
        if canonical not in attrs and isinstance(value, (int, float)) and not isinstance(value, bool):
            attrs[canonical] = repr(value)
    stop = params.get("stop")
    if semconv.REQUEST_STOP_SEQUENCES not in attrs and stop:
        attrs[semconv.REQUEST_STOP_SEQUENCES] = orjson.dumps([stop] if isinstance(stop, str) else stop).decode()


def _add_output_type(attrs: dict[str, str], fmt: Mapping[str, Any]) -> None:
    # OpenAI's response_format: {"type": "json_object"} or {"type": "json_schema", "json_schema":
    # {"name": ..., "schema": {...}}}; "text" is no promise of JSON.
    if fmt.get("type") not in ("json_object", "json_schema"):
        return
    attrs[semconv.OUTPUT_TYPE] = "json"
    spec = fmt.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if semconv.JSON_SCHEMA not in attrs and isinstance(schema, dict):
        text = orjson.dumps(schema).decode()
        if len(text) <= MAX_SCHEMA_CHARS:
            attrs[semconv.JSON_SCHEMA] = text


def _indexed_tools(attrs: Mapping[str, str]) -> list[Any]:
    tools = []
    for i in range(1000):
        raw = attrs.get(f"llm.tools.{i}.tool.json_schema")
        if raw is None:
            break
        tools.append(_loads(raw))
    return tools


def _add_tool_definitions(attrs: dict[str, str], tools: Sequence[Any]) -> None:
    # GenAI's shape (as OpenLLMetry writes it): {"type", "name", "description", "parameters"},
    # where OpenAI's request nests all but the type under "function".
    out = []
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        inner = tool.get("function")
        flat = {"type": tool.get("type", "function"), **inner} if isinstance(inner, dict) else dict(tool)
        out.append(flat)
    if out:
        attrs[semconv.TOOL_DEFINITIONS] = orjson.dumps(out).decode()


def _loads(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _add_ttft(attrs: dict[str, str], row: Mapping[str, Any]) -> None:
    for name, at in zip(row["Events.Name"], row["Events.Timestamp"], strict=False):
        if name in _FIRST_CHUNK_EVENTS:
            attrs[semconv.TTFT_S] = repr(max(row_time_ns(at) - row_time_ns(row["Timestamp"]), 0) / 1e9)
            return


def _add_error_type(attrs: dict[str, str], row: Mapping[str, Any]) -> None:
    raw = attrs.get(semconv.ERROR_TYPE) or _exception_type(row)
    if not raw:
        return
    short = _short_name(raw)
    if raw != short:
        if semconv.ERROR_TYPE in attrs:
            attrs[semconv.ERROR_TYPE_ORIGINAL] = raw
        attrs[semconv.ERROR_TYPE] = short
    elif semconv.ERROR_TYPE not in attrs:
        attrs[semconv.ERROR_TYPE] = short
    if semconv.ERROR_CLASS not in attrs and row["StatusCode"] == "Error":
        attrs[semconv.ERROR_CLASS] = _error_class(short)


def _exception_type(row: Mapping[str, Any]) -> str:
    for name, event_attrs in zip(row["Events.Name"], row["Events.Attributes"], strict=False):
        if name == "exception" and event_attrs.get("exception.type"):
            return str(event_attrs["exception.type"])
    return ""


def _short_name(raw: str) -> str:
    """The class name alone, as the SDK writes ``error.type``: ``<class 'openai.X'>`` and ``openai.X`` -> ``X``."""
    match = _CLASS_REPR.match(raw)
    name = match.group(1) if match else raw
    if " " in name or "." not in name:
        return name  # a sentence or a bare name: nothing to shorten
    return name.rsplit(".", 1)[1]


@lru_cache(maxsize=256)
def _error_class(name: str) -> str:
    # The SDK's own classifier reads the class hierarchy's names when no status code is at hand;
    # a class of that name is all a foreign span tells about its exception.
    return classify_error(type(name, (Exception,), {})())


def _add_messages(attrs: dict[str, str], key: str, prefixes: Sequence[str], value_key: str, role: str) -> None:
    for prefix in prefixes:
        messages = _indexed_messages(attrs, prefix)
        if messages:
            break
    else:
        messages = _plain_value(attrs, value_key, role)
    if not messages:
        return
    if key == semconv.OUTPUT_MESSAGES and (reasons := attrs.get(semconv.FINISH_REASONS)):
        first = _first_reason(reasons)
        if first:
            messages[0]["finish_reason"] = first
    attrs[key] = orjson.dumps(messages).decode()


def _indexed_messages(attrs: Mapping[str, str], prefix: str) -> list[dict[str, Any]]:
    # OpenInference: llm.input_messages.N.message.role/content (or .contents.M.message_content.text);
    # OpenLLMetry: gen_ai.prompt.N.role/content.
    inner = ".message" if prefix.startswith("llm.") else ""
    out: list[dict[str, Any]] = []
    for i in range(1000):
        base = f"{prefix}.{i}{inner}"
        role, content = attrs.get(f"{base}.role"), attrs.get(f"{base}.content")
        if content is None:
            content = _content_parts(attrs, base)
        if role is None and content is None:
            break
        out.append({"role": role or "user", "parts": [{"type": "text", "content": content or ""}]})
    return out


def _content_parts(attrs: Mapping[str, str], base: str) -> str | None:
    texts = []
    for j in range(1000):
        text = attrs.get(f"{base}.contents.{j}.message_content.text")
        if text is None:
            break
        texts.append(text)
    return "\n".join(texts) if texts else None


def _plain_value(attrs: Mapping[str, str], value_key: str, role: str) -> list[dict[str, Any]]:
    # input.value / output.value are the request and response as JSON for a client span, and plain
    # text for most framework spans: only text is a message.
    value = attrs.get(f"{value_key}.value")
    if not value or attrs.get(f"{value_key}.mime_type", "text/plain") != "text/plain":
        return []
    return [{"role": role, "parts": [{"type": "text", "content": value}]}]


def _first_reason(reasons_json: str) -> str:
    reasons = _loads(reasons_json)
    return str(reasons[0]) if isinstance(reasons, list) and reasons else ""
