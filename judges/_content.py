"""What the judges read of stored messages, through the one reader every surface shares
(:func:`infersight.detectors.parse_messages`): each message's role (``user`` when none was
recorded) and its text parts; a span with no content gives no messages and is skipped.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from infersight.detectors import parse_messages as stored_messages

from ._types import Message

# The turns that identify "the same input" across app versions. System prompts are left out on
# purpose: a new version often changes exactly that, and must still match the same user input.
# Tool messages (retrieved context) are left out too, since retrieval may change between versions.
_KEY_ROLES = frozenset({"user", "assistant"})
_ANSWER_ROLES = frozenset({"assistant", "model", ""})  # "": plain text, no role recorded


def parse_messages(raw: str) -> tuple[Message, ...]:
    """The messages of a stored messages string (their text parts); empty when there is none."""
    return tuple(Message(m.role or "user", m.text) for m in stored_messages(raw))


def answer_text(raw_output: str) -> str:
    """The answer's text from ``gen_ai.output.messages``: the assistant messages' text parts (or
    the whole output when it was recorded as plain text)."""
    return "\n".join(m.text for m in stored_messages(raw_output) if m.role in _ANSWER_ROLES and m.text)


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
