"""Read the GenAI message JSON the SDK stores (``gen_ai.input.messages``/``gen_ai.output.messages``).

The OpenTelemetry GenAI format is ``[{"role": "user", "parts": [{"type": "text", "content": "..."}]}]``;
the plain ``{"role": ..., "content": "..."}`` shape other instrumentations write is accepted too.
Only text parts are kept. Malformed JSON gives no messages rather than an error: a span whose
content cannot be read is skipped by the sampler, not fatal to a run.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ._types import Message

# The turns that identify "the same input" across app versions. System prompts are left out on
# purpose: a new version often changes exactly that, and must still match the same user input.
# Tool messages (retrieved context) are left out too, since retrieval may change between versions.
_KEY_ROLES = frozenset({"user", "assistant"})


def parse_messages(raw: str) -> tuple[Message, ...]:
    """The messages of a GenAI messages JSON string; empty when it is missing or malformed."""
    if not raw:
        return ()
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        return ()
    if not isinstance(document, list):
        return ()
    out = []
    for item in document:
        if not isinstance(item, dict):
            continue
        role = item.get("role")
        out.append(Message(role if isinstance(role, str) else "user", _text(item)))
    return tuple(out)


def _text(message: dict[str, Any]) -> str:
    parts = message.get("parts")
    if isinstance(parts, list):
        texts = [
            p["content"] for p in parts
            if isinstance(p, dict) and p.get("type", "text") == "text" and isinstance(p.get("content"), str)
        ]
        return "\n".join(texts)
    content = message.get("content")
    return content if isinstance(content, str) else ""


def answer_text(raw_output: str) -> str:
    """The answer's text from ``gen_ai.output.messages``: the assistant messages' text parts."""
    messages = parse_messages(raw_output)
    return "\n".join(m.content for m in messages if m.role in ("assistant", "model") and m.content)


def input_key(messages: tuple[Message, ...] | list[Message]) -> str:
    """A hash that identifies an input across app versions (user and assistant turns only).

    Whitespace at the ends of each text is ignored, so a version that formats the same
    question with a trailing newline still matches.
    """
    turns = [[m.role, m.content.strip()] for m in messages if m.role in _KEY_ROLES]
    canonical = json.dumps(turns, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "replace")).hexdigest()[:32]


def messages_to_json(messages: tuple[Message, ...] | list[Message]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


def messages_from_json(items: Any) -> tuple[Message, ...]:
    if not isinstance(items, list):
        return ()
    return tuple(
        Message(str(i.get("role", "user")), str(i.get("content", ""))) for i in items if isinstance(i, dict)
    )
