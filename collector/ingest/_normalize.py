"""One vocabulary for every reader: canonical attributes added to spans of other instrumentations.

The SDK writes the OpenTelemetry GenAI conventions plus ``infersight.*``; OpenInference
(``llm.*``, ``session.id``), OpenLLMetry (``gen_ai.prompt.N.*``, ``traceloop.association.*``)
and openai-v2 each write part of the same facts under other names, or only as span events. For
every span, :func:`normalize` ADDS the canonical name when it is absent, so the typed view, the
inline detectors, the trace view and the cost step read one vocabulary. Originals are kept:
nothing is removed, and the one value rewritten in place (an ``error.type`` spelled as a Python
class repr) keeps its original under ``infersight.error.type.original``.

Runs in the decode workers for every span (see ``bench`` numbers in the module's tests): spans
that already speak the canonical vocabulary cost a few dictionary look-ups.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import orjson

from infersight.sdk import classify_error

from ..store import LLM, kind_of, operation_of
from ._times import ts_ns

OPERATION = "gen_ai.operation.name"
TTFT_S = "gen_ai.response.time_to_first_chunk"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"
ERROR_CLASS = "infersight.error.class"
USER = "infersight.user.id"
SESSION = "gen_ai.conversation.id"  # GenAI's name for a conversation (a session): no infersight.* twin

# canonical name <- the other vocabularies' names for it, first present wins
_ALIASES: dict[str, tuple[str, ...]] = {
    "gen_ai.request.model": ("llm.model_name",),
    "gen_ai.provider.name": ("gen_ai.system", "llm.provider", "llm.system"),
    "gen_ai.usage.input_tokens": ("gen_ai.usage.prompt_tokens", "llm.token_count.prompt", "llm.usage.prompt_tokens"),
    "gen_ai.usage.output_tokens": (
        "gen_ai.usage.completion_tokens", "llm.token_count.completion", "llm.usage.completion_tokens",
    ),
    "gen_ai.usage.cache_read.input_tokens": ("llm.token_count.prompt_details.cache_read",),
    "gen_ai.usage.cache_creation.input_tokens": ("llm.token_count.prompt_details.cache_write",),
    "gen_ai.usage.reasoning.output_tokens": ("llm.token_count.completion_details.reasoning",),
    USER: ("user.id", "traceloop.association.properties.user_id"),
    SESSION: ("session.id", "traceloop.association.properties.session_id"),
}
# The first streamed chunk, as each package records it: OpenInference once, OpenLLMetry per chunk.
_FIRST_CHUNK_EVENTS = frozenset({
    "First Token Stream Event", "gen_ai.content.completion.chunk", "llm.content.completion.chunk",
})
_CLASS_REPR = re.compile(r"^<class '([\w.]+)'>$")


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
    if OPERATION not in attrs and (operation := operation_of(attrs)):
        attrs[OPERATION] = operation
    for canonical, aliases in _ALIASES.items():
        if canonical not in attrs:
            for alias in aliases:
                value = attrs.get(alias)
                if value:
                    attrs[canonical] = value
                    break
    if FINISH_REASONS not in attrs:
        _add_finish_reasons(attrs)
    if row["StatusCode"] == "Error" or ERROR_TYPE in attrs:
        _add_error_type(attrs, row)
    if kind_of(attrs.get(OPERATION, "")) != LLM:
        return
    if TTFT_S not in attrs and row["Events.Name"]:
        _add_ttft(attrs, row)
    if INPUT_MESSAGES not in attrs and any(key in attrs for key in _FIRST_INPUT_KEYS):
        _add_messages(attrs, INPUT_MESSAGES, ("llm.input_messages", "gen_ai.prompt"), "input", "user")
    if OUTPUT_MESSAGES not in attrs and any(key in attrs for key in _FIRST_OUTPUT_KEYS):
        _add_messages(attrs, OUTPUT_MESSAGES, ("llm.output_messages", "gen_ai.completion"), "output", "assistant")


def _add_finish_reasons(attrs: dict[str, str]) -> None:
    # OpenInference: one string; older OpenLLMetry: per completion choice.
    reasons = [attrs["llm.finish_reason"]] if attrs.get("llm.finish_reason") else []
    i = 0
    while reason := attrs.get(f"gen_ai.completion.{i}.finish_reason"):
        reasons.append(reason)
        i += 1
    if reasons:
        attrs[FINISH_REASONS] = orjson.dumps(reasons).decode()


def _add_ttft(attrs: dict[str, str], row: Mapping[str, Any]) -> None:
    for name, at in zip(row["Events.Name"], row["Events.Timestamp"], strict=False):
        if name in _FIRST_CHUNK_EVENTS:
            attrs[TTFT_S] = repr(max(ts_ns(at) - ts_ns(row["Timestamp"]), 0) / 1e9)
            return


def _add_error_type(attrs: dict[str, str], row: Mapping[str, Any]) -> None:
    raw = attrs.get(ERROR_TYPE) or _exception_type(row)
    if not raw:
        return
    short = _short_name(raw)
    if raw != short:
        if ERROR_TYPE in attrs:
            attrs["infersight.error.type.original"] = raw
        attrs[ERROR_TYPE] = short
    elif ERROR_TYPE not in attrs:
        attrs[ERROR_TYPE] = short
    if ERROR_CLASS not in attrs and row["StatusCode"] == "Error":
        attrs[ERROR_CLASS] = _error_class(short)


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
    if key == OUTPUT_MESSAGES and (reasons := attrs.get(FINISH_REASONS)):
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
    try:
        reasons = orjson.loads(reasons_json)
    except orjson.JSONDecodeError:
        return ""
    return str(reasons[0]) if isinstance(reasons, list) and reasons else ""
