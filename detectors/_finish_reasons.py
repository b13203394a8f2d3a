"""Finish reasons: every provider's spelling, and what it means for the detectors.

Each provider names why an answer ended in its own words; the detectors ask only a few
questions of it (was the answer cut? did a filter block it? did the model call a tool?), so
one table maps every spelling to one canonical kind:

* ``stop``: the model ended the answer itself (or hit a stop sequence).
* ``length``: the output-token limit or the context window cut the answer.
* ``content_filter``: a safety filter, guardrail, blocklist or recitation check blocked it.
* ``tool_calls``: the model stopped to call a tool.
* ``pause``: the provider paused a long turn, to be continued by the caller.
* ``error``: the provider failed while generating.
* ``other``: a reason the provider does not explain, or one this table does not know.

Sources, each provider's API reference: OpenAI chat ``finish_reason`` and Responses
``incomplete_details.reason``; Anthropic ``stop_reason``; Gemini and Vertex
``Candidate.FinishReason``; Bedrock Converse ``stopReason``; Mistral ``finish_reason``;
Cohere v1 and v2 ``finish_reason``. OpenLLMetry and the GenAI output-message convention write
OpenAI's ``tool_calls`` as ``tool_call``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

STOP = "stop"
LENGTH = "length"
CONTENT_FILTER = "content_filter"
TOOL_CALLS = "tool_calls"
PAUSE = "pause"
ERROR = "error"
OTHER = "other"

# Keys lower-cased: Gemini and Cohere write upper case, the rest lower case, and no two
# providers use one spelling for different things.
_KINDS: dict[str, str] = {
    # OpenAI chat completions (and Azure, and every OpenAI-compatible server)
    "stop": STOP,
    "length": LENGTH,
    "content_filter": CONTENT_FILTER,
    "tool_calls": TOOL_CALLS,
    "function_call": TOOL_CALLS,
    # OpenAI Responses API, incomplete_details.reason
    "max_output_tokens": LENGTH,
    # OpenLLMetry and the GenAI output-message finish_reason enum
    "tool_call": TOOL_CALLS,
    # Anthropic stop_reason
    "end_turn": STOP,
    "stop_sequence": STOP,
    "max_tokens": LENGTH,
    "model_context_window_exceeded": LENGTH,
    "tool_use": TOOL_CALLS,
    "pause_turn": PAUSE,
    "refusal": CONTENT_FILTER,
    # Gemini / Vertex AI Candidate.FinishReason ("STOP" and "MAX_TOKENS" above)
    "finish_reason_unspecified": OTHER,
    "safety": CONTENT_FILTER,
    "recitation": CONTENT_FILTER,
    "language": OTHER,
    "blocklist": CONTENT_FILTER,
    "prohibited_content": CONTENT_FILTER,
    "spii": CONTENT_FILTER,
    "image_safety": CONTENT_FILTER,
    "image_prohibited_content": CONTENT_FILTER,
    "image_recitation": CONTENT_FILTER,
    "image_other": OTHER,
    "no_image": OTHER,
    "malformed_function_call": ERROR,
    "unexpected_tool_call": ERROR,
    "too_many_tool_calls": ERROR,
    # Bedrock Converse stopReason ("end_turn", "tool_use", "max_tokens", "stop_sequence" above)
    "guardrail_intervened": CONTENT_FILTER,
    "content_filtered": CONTENT_FILTER,
    # Mistral ("stop", "length", "tool_calls" above)
    "model_length": LENGTH,
    "error": ERROR,
    # Cohere v1 and v2 ("MAX_TOKENS", "STOP_SEQUENCE", "TOOL_CALL", "ERROR" above)
    "complete": STOP,
    "error_toxic": CONTENT_FILTER,
    "error_limit": LENGTH,
    "user_cancel": OTHER,
    "timeout": ERROR,
    "other": OTHER,
}

FINISH_REASON_KINDS: Mapping[str, str] = MappingProxyType(_KINDS)
"""Every known finish reason, lower-cased, to its canonical kind (see the module docstring)."""

FINISH_REASON_SPELLINGS: Mapping[str, str] = MappingProxyType(
    {"tool_call": "tool_calls", "function_call": "tool_calls"}
)
"""Other instrumentations' spellings of OpenAI's own reasons, to the name OpenAI uses: what
ingest rewrites so that one question (how many answers asked for a tool) has one answer. The
stored reasons otherwise stay the provider's own words."""


def finish_reason_kind(reason: object) -> str:
    """The canonical kind of one finish reason: ``"length"`` for Gemini's ``"MAX_TOKENS"``.

    Case and surrounding blanks do not matter; an empty reason is ``""`` and one the table
    does not know is ``"other"``. Constant time, never raises.
    """
    if not isinstance(reason, str):
        return ""
    key = reason.strip().lower()
    if not key:
        return ""
    return _KINDS.get(key, OTHER)


def first_of_kind(reasons: Iterable[object], kind: str) -> str | None:
    """The first of ``reasons`` (one per choice) whose kind is ``kind``, lower-cased, or None."""
    for reason in reasons:
        if finish_reason_kind(reason) == kind:
            return str(reason).strip().lower()
    return None
