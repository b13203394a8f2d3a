"""The one reader of stored messages (``gen_ai.input.messages`` / ``gen_ai.output.messages``).

The stored format is OpenTelemetry GenAI's, as the SDK writes it and as the collector rewrites
other instrumentations' content at ingest::

    [{"role": "user", "parts": [{"type": "text", "content": "..."}]}]

Older or foreign shapes are read too: OpenAI-style ``{"role", "content": "..."}`` and
``content`` lists of ``{"type": "text", "text": ...}``. A single message object is a list of one;
anything else (plain text some instrumentations record) is one message of unknown role whose
text is the whole string. Every surface (detectors, judges, the trace view, the ingest path) derives
what it shows from :func:`parse_messages`, so they agree on what a message says.

It lives here, the lowest of the analysis packages, because everything that reads messages may
import the detectors, while the detectors may import nothing of ours.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

TEXT = "text"

# orjson (the collector's) where installed, for documents up to _FAST_MAX_CHARS: it read the
# benchmark's 0.4 KB answers in 0.6 µs against json's 3.9, and the collector parses one per span
# it analyses. Larger ones (prompts hashed for pairing) go to json: orjson's parse keeps twice the
# text resident at its peak (120 MiB for a 60 MiB prompt; json 60) in a decode worker whose bound
# is 406 MiB, and such a prompt is read once. orjson reads text exactly as json does; what it
# refuses (NaN, lone surrogates, nesting past 1024) goes to json, and so does a document with a
# part other than text, which is shown as its JSON: orjson reads an integer past 64 bits as a
# float, json as the integer. The same messages come out. The SDK, which installs no orjson,
# uses json.
_fast_loads: Callable[[str], Any] | None
try:
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - the SDK's own install
    _fast_loads = None
_FAST_MAX_CHARS = 1 << 16


@dataclass(frozen=True, slots=True)
class MessagePart:
    """One part of a message: ``type`` is ``"text"`` for text (``text`` is the text); any other
    part (a tool call, an image, a part of unknown shape) keeps its type and ``text`` is its JSON."""

    type: str
    text: str


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """A stored message: its role (``""`` when unknown) and parts in order."""

    role: str
    parts: tuple[MessagePart, ...]

    @property
    def text(self) -> str:
        """The text parts joined with newlines (other parts left out)."""
        return "\n".join(part.text for part in self.parts if part.type == TEXT)


def parse_messages(raw: str | None) -> tuple[ChatMessage, ...]:
    """The messages of a stored messages string; ``()`` when empty. Never raises."""
    if not isinstance(raw, str) or not raw:
        return ()
    if _fast_loads is not None and len(raw) <= _FAST_MAX_CHARS:
        try:
            messages = _read(_fast_loads(raw), raw)
        except ValueError:  # orjson.JSONDecodeError is a ValueError
            pass
        else:
            if all(part.type == TEXT for message in messages for part in message.parts):
                return messages
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        return (ChatMessage("", (MessagePart(TEXT, raw),)),)
    return _read(document, raw)


def messages_text(raw: str | None) -> str:
    """All the text of a stored messages string, message after message, joined with newlines."""
    return "\n".join(text for message in parse_messages(raw) if (text := message.text))


def _read(document: Any, raw: str) -> tuple[ChatMessage, ...]:
    if isinstance(document, dict):  # one message alone
        return (_message(document),)
    if not isinstance(document, list):
        return (ChatMessage("", (MessagePart(TEXT, raw),)),)
    return tuple(_message(item) for item in document)


def _message(item: Any) -> ChatMessage:
    if not isinstance(item, dict):
        return ChatMessage("", (_other(item),))
    role = item.get("role")
    parts: list[MessagePart] = []
    content = item.get("content")
    if isinstance(content, str):
        parts.append(MessagePart(TEXT, content))
    elif isinstance(content, list):  # OpenAI's content parts: {"type": "text", "text": ...}
        parts.extend(_part(part, text_key="text") for part in content)
    listed = item.get("parts")
    if isinstance(listed, list):
        parts.extend(_part(part, text_key="content") for part in listed)
    if not parts:  # e.g. an assistant turn that is only tool calls: shown, never lost
        rest = {key: value for key, value in item.items() if key not in ("role", "content", "parts")}
        if rest:
            parts.append(_other(rest))
    return ChatMessage(role if isinstance(role, str) else "", tuple(parts))


def _part(part: Any, *, text_key: str) -> MessagePart:
    if isinstance(part, dict) and part.get("type", TEXT) == TEXT and isinstance(part.get(text_key), str):
        return MessagePart(TEXT, part[text_key])
    return _other(part)


def _other(value: Any) -> MessagePart:
    kind = value.get("type") if isinstance(value, dict) else None
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):  # nested deeper than the encoder goes
        text = "…"
    return MessagePart(kind if isinstance(kind, str) and kind != TEXT else "json", text)
