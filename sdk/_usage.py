"""Token usage, response model and finish reasons read from whatever a provider call returned.

Handles OpenAI Chat Completions and Responses, Anthropic Messages, and plain dicts of the same
shapes. ``input_tokens`` always includes cached input (the OpenTelemetry GenAI convention and
genai-prices both count it that way), so Anthropic's separate cache counters are added back in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    reasoning_tokens: int = 0
    response_model: str | None = None
    response_id: str | None = None
    finish_reasons: tuple[str, ...] = ()


def _get(obj: Any, name: str) -> Any:
    """``obj[name]`` or ``obj.name``, ``None`` when absent; never raises, whatever ``obj`` is.

    Lazy proxies and strict mocks raise from ``__getattr__`` things other than AttributeError;
    to the SDK such an object simply lacks the field.
    """
    if type(obj) is dict:  # the common case first: the export thread reads ~20 fields a call
        return obj.get(name)
    if obj is None:
        return None
    try:
        if isinstance(obj, dict):
            return obj.get(name)
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - reading a user's object must never raise into the app
        return None


def _int(value: Any) -> int | None:
    # bool is an int subclass; a True token count is a bug in the caller's object, not a count.
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def extract_usage(response: Any) -> Usage:
    """Read usage from a provider response; fields the response lacks stay ``None`` or zero."""
    usage = Usage()
    raw = _get(response, "usage")
    if raw is not None:
        _read_counts(raw, usage)
    model = _get(response, "model")
    if isinstance(model, str):
        usage.response_model = model
    # The provider's id of this exchange: what proves that another instrumentation's span of the
    # same call is the same call (the collector pairs on it).
    response_id = _get(response, "id")
    if type(response_id) is str:
        usage.response_id = response_id
    usage.finish_reasons = _finish_reasons(response)
    return usage


def _read_counts(raw: Any, usage: Usage) -> None:
    prompt = _int(_get(raw, "prompt_tokens"))
    if prompt is not None:  # OpenAI Chat Completions
        usage.input_tokens = prompt
        usage.output_tokens = _int(_get(raw, "completion_tokens"))
        usage.cache_read_tokens = _int(_get(_get(raw, "prompt_tokens_details"), "cached_tokens")) or 0
        usage.reasoning_tokens = (
            _int(_get(_get(raw, "completion_tokens_details"), "reasoning_tokens")) or 0
        )
        return
    usage.input_tokens = _int(_get(raw, "input_tokens"))
    usage.output_tokens = _int(_get(raw, "output_tokens"))
    cache_read = _int(_get(raw, "cache_read_input_tokens"))
    cache_creation = _int(_get(raw, "cache_creation_input_tokens"))
    if cache_read is not None or cache_creation is not None:  # Anthropic: input excludes cache
        usage.cache_read_tokens = cache_read or 0
        usage.cache_creation_tokens = cache_creation or 0
        if usage.input_tokens is not None:
            usage.input_tokens += usage.cache_read_tokens + usage.cache_creation_tokens
        return
    # OpenAI Responses API
    usage.cache_read_tokens = _int(_get(_get(raw, "input_tokens_details"), "cached_tokens")) or 0
    usage.reasoning_tokens = _int(_get(_get(raw, "output_tokens_details"), "reasoning_tokens")) or 0


def _finish_reasons(response: Any) -> tuple[str, ...]:
    stop_reason = _get(response, "stop_reason")  # Anthropic
    if isinstance(stop_reason, str):
        return (stop_reason,)
    choices = _get(response, "choices")
    if isinstance(choices, (list, tuple)):
        reasons = tuple(r for r in (_get(c, "finish_reason") for c in choices) if isinstance(r, str))
        if reasons:
            return reasons
    status = _get(response, "status")  # OpenAI Responses: completed | incomplete | failed
    if isinstance(status, str) and _get(response, "output") is not None:
        reason = _get(_get(response, "incomplete_details"), "reason")
        return (reason if isinstance(reason, str) else status,)
    return ()
