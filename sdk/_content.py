"""Prompt and completion capture: GenAI message JSON, truncated and redacted in-process.

Redaction runs before anything is set on a span, so secrets never reach the exporter. The
built-in patterns favour precision: card numbers must pass the Luhn check, phone numbers need
a leading ``+`` or a separator pattern, API keys are matched by their vendors' prefixes.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from json.encoder import encode_basestring as _json_string
from typing import Any

from . import semconv
from ._usage import _get

Redactor = Callable[[str], str]

_PATTERNS = {
    "API_KEY": r"\b(?:sk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}|isk_[A-Za-z0-9_-]{16,})",
    "EMAIL": r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b",
    "CARD": r"\b(?:\d[ -]?){12,18}\d\b",
    "PHONE": r"(?<![\w+])\+\d{1,3}[\s.-]?(?:\(\d{1,4}\)[\s.-]?)?\d{2,4}(?:[\s.-]?\d{2,4}){2,4}\b",
}
_GITHUB_PREFIX = re.compile("gh[pousr]_")
_DIGIT_BYTES = b"0123456789"
# The card pattern needs 13 digits at least (and the Luhn check, 13 to 19).
_CARD_DIGITS = 13


def _possible(text: str) -> tuple[str, ...]:
    """The patterns that can match somewhere in ``text``, by what each cannot match without.

    Scanning a text with the four-way alternation costs ~40 ns a character, most of it spent on
    texts holding nothing to redact; these substring checks run at memory speed. Leaving out a
    pattern that cannot match anywhere changes no match of the others.
    """
    kinds = []
    # Every key prefix holds a '-', a '_' or an 'A': looking for one character is a memchr
    # (~0.06 µs a KB), for a longer substring ~0.7 µs a KB, six times.
    if (("-" in text and ("sk-" in text or "xox" in text))
            or ("A" in text and ("AKIA" in text or "AIza" in text))
            or ("_" in text and ("isk_" in text or ("gh" in text and _GITHUB_PREFIX.search(text) is not None)))):
        kinds.append("API_KEY")
    if "@" in text:
        kinds.append("EMAIL")
    if len(text) >= _CARD_DIGITS and _ascii_digits(text) >= _CARD_DIGITS:
        kinds.append("CARD")
    if "+" in text:
        kinds.append("PHONE")
    return tuple(kinds)


def _ascii_digits(text: str) -> int:
    """How many of ``text``'s characters are ASCII digits.

    UTF-8 writes every other character with bytes of 0x80 and up, so deleting the ten digit
    bytes from the encoded text counts exactly them: two C passes, where counting each digit
    with ``str.count`` took ten (1.7 µs on a 60-character prompt, ~25 µs on 1 KB).
    """
    raw = text.encode("utf-8", "surrogatepass")
    return len(raw) - len(raw.translate(None, _DIGIT_BYTES))


@functools.cache
def _scanner(kinds: tuple[str, ...]) -> re.Pattern[str]:
    # One alternation, one scan of the text, in the order of _PATTERNS (it decides ties).
    return re.compile("|".join(f"(?P<{name}>{_PATTERNS[name]})" for name in kinds))


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _replace(match: re.Match[str]) -> str:
    kind = match.lastgroup
    if kind == "CARD":
        digits = re.sub(r"\D", "", match.group())
        if not (13 <= len(digits) <= 19 and _luhn_ok(digits)):
            return match.group()
    return f"[{kind}]"


def redact_builtin(text: str) -> str:
    """Replace emails, phone numbers, API keys and card numbers with ``[EMAIL]``-style markers."""
    kinds = _possible(text)
    if not kinds:
        return text
    if kinds == _EMAIL_ONLY:
        return _redact_emails(text)
    return _scanner(kinds).sub(_replace, text)


_EMAIL_ONLY = ("EMAIL",)
_EMAIL_LOCAL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._%+-")
_BOUNDARY = re.compile(r"\b")


def _redact_emails(text: str) -> str:
    """What the email pattern's ``sub`` gives, trying it only next to each ``@``.

    ``sub`` tries the pattern at every word boundary of the text (~30 ns a character: 35 µs for
    a 1 KB prompt holding one address). An address ends its local part at an ``@``, so it can only
    start at the first word boundary of the run of local-part characters before one; and whether
    it matches from there depends only on what follows the ``@``, so one attempt per ``@`` decides.
    """
    email = _scanner(_EMAIL_ONLY)
    pieces = []
    pos = 0
    at = text.find("@")
    while at >= 0:
        start = at
        while start > pos and text[start - 1] in _EMAIL_LOCAL:
            start -= 1
        boundary = _BOUNDARY.search(text, start, at + 1) if start < at else None
        match = email.match(text, boundary.start()) if boundary is not None and boundary.start() < at else None
        if match is not None:
            pieces.append(text[pos:match.start()])
            pieces.append("[EMAIL]")
            pos = match.end()
        at = text.find("@", max(pos, at + 1))
    if not pieces:
        return text
    pieces.append(text[pos:])
    return "".join(pieces)


def apply_redactors(text: str, redactors: Iterable[Redactor]) -> str:
    for redactor in redactors:
        text = redactor(text)
    return text


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts / Anthropic content blocks
        parts = []
        for part in content:
            text = _get(part, "text")
            if isinstance(text, str):
                parts.append(text)
        return "\n".join(parts)
    if content is None:
        return ""
    try:
        return str(content)
    except Exception:  # noqa: BLE001 - an object whose __str__ raises is recorded as empty
        return ""


def input_messages(kwargs: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """GenAI ``gen_ai.input.messages`` from a call's ``messages=``/``input=``/``prompt=`` argument,
    or a provider request body of the same names (Anthropic's ``system`` blocks and the Responses
    API's ``instructions`` and list ``input`` included)."""
    out: list[dict[str, Any]] = []
    _add_messages(out, kwargs.get("messages"))
    for name in ("system", "instructions"):
        system = kwargs.get(name)
        if isinstance(system, (str, list)) and system:
            out.insert(0, {"role": "system", "parts": [{"type": "text", "content": _text_of(system)}]})
    for name in ("input", "prompt"):
        value = kwargs.get(name)
        if isinstance(value, str):
            out.append({"role": "user", "parts": [{"type": "text", "content": value}]})
        elif name == "input" and isinstance(value, list):  # Responses API: a list of input items
            _add_messages(out, value)
    return out or None


def _add_messages(out: list[dict[str, Any]], messages: Any) -> None:
    if isinstance(messages, (list, tuple)):
        for message in messages:
            role = _get(message, "role")
            out.append({"role": role if isinstance(role, str) else "user",
                        "parts": [{"type": "text", "content": _text_of(_get(message, "content"))}]})


def output_text(result: Any) -> str | None:
    """The answer's text from a provider response (OpenAI, Anthropic, Responses API) or a string."""
    if isinstance(result, str):
        return result
    choices = _get(result, "choices")
    if isinstance(choices, (list, tuple)) and choices:
        return _text_of(_get(_get(choices[0], "message"), "content"))
    content = _get(result, "content")
    if isinstance(content, list):
        return _text_of(content)
    text = _get(result, "output_text")
    return text if isinstance(text, str) else None


def messages_json(
    messages: list[dict[str, Any]], redactors: Iterable[Redactor], limit_chars: int
) -> tuple[str, bool]:
    """Redact every text part, truncate the total to ``limit_chars``; returns (json, truncated).

    The JSON is what ``json.dumps(messages, ensure_ascii=False, separators=(",", ":"))`` writes.
    """
    remaining = limit_chars
    truncated = False
    redactors = tuple(redactors)
    only = redactors[0] if len(redactors) == 1 else None  # the default: the built-in redaction alone
    for message in messages:
        for part in message["parts"]:
            text = only(part["content"]) if only is not None else apply_redactors(part["content"], redactors)
            if len(text) > remaining:
                text, truncated = text[: max(remaining, 0)], True
            remaining -= len(text)
            part["content"] = text
    encoded = _encode_messages(messages)
    if encoded is None:
        encoded = json.dumps(messages, ensure_ascii=False, separators=(",", ":"))
    return encoded, truncated


_MESSAGE_KEYS = (("role", "parts"), ("role", "parts", "finish_reason"))
_PART_KEYS = ("type", "content")


def _encode_messages(messages: list[dict[str, Any]]) -> str | None:
    """The messages' JSON, for the shape :func:`input_messages` builds (``None`` for any other).

    Strings go through the json module's own C string encoder, so the text is the same as
    ``json.dumps`` writes; only the fixed keys around them are written here. json.dumps spent
    most of its ~5 µs per message list building an encoder for each call.
    """
    pieces = []
    for message in messages:
        if type(message) is not dict or tuple(message) not in _MESSAGE_KEYS:
            return None
        role, parts, reason = message["role"], message["parts"], message.get("finish_reason", "")
        if type(role) is not str or type(parts) is not list or type(reason) is not str:
            return None
        texts = []
        for part in parts:
            if (type(part) is not dict or tuple(part) != _PART_KEYS or part["type"] != "text"
                    or type(part["content"]) is not str):
                return None
            texts.append('{"type":"text","content":' + _json_string(part["content"]) + "}")
        tail = ',"finish_reason":' + _json_string(reason) + "}" if len(message) == 3 else "}"
        pieces.append('{"role":' + _json_string(role) + ',"parts":[' + ",".join(texts) + "]" + tail)
    return "[" + ",".join(pieces) + "]"


_QUERY_ARGS = ("query", "question", "q")
_DOC_TEXT_FIELDS = ("page_content", "text", "content", "document")


def _document(item: Any) -> dict[str, Any]:
    """One hit as ``{"id", "score", "content"}`` from a dict, an object, a string or a (doc, score) pair."""
    score = None
    if isinstance(item, tuple) and len(item) == 2:
        item, score = item
    doc: dict[str, Any] = {}
    identifier = _get(item, "id")
    if isinstance(identifier, (str, int)) and not isinstance(identifier, bool):
        doc["id"] = identifier
    score = _get(item, "score") if score is None else score
    if isinstance(score, (int, float)) and not isinstance(score, bool):
        doc["score"] = score
    text = item if isinstance(item, str) else next(
        (t for t in (_get(item, name) for name in _DOC_TEXT_FIELDS) if isinstance(t, str)), None
    )
    doc["content"] = text or ""
    return doc


def retrieval_content(
    kwargs: Mapping[str, Any], result: Any, out: dict[str, Any], redactors: Iterable[Redactor], limit_chars: int
) -> None:
    """The query (``gen_ai.retrieval.query.text``) and hits (``gen_ai.retrieval.documents``), redacted."""
    query = next((q for q in (kwargs.get(name) for name in _QUERY_ARGS) if isinstance(q, str)), None)
    if query is not None:
        text = apply_redactors(query, redactors)
        if len(text) > limit_chars:
            text, out[semconv.CONTENT_TRUNCATED] = text[:limit_chars], True
        out[semconv.RETRIEVAL_QUERY] = text
    if not isinstance(result, (list, tuple)):
        return
    remaining = limit_chars
    docs = []
    for item in result:
        doc = _document(item)
        text = apply_redactors(doc["content"], redactors)
        if len(text) > remaining:
            text, out[semconv.CONTENT_TRUNCATED] = text[: max(remaining, 0)], True
        remaining -= len(text)
        doc["content"] = text
        docs.append(doc)
    out[semconv.RETRIEVAL_DOCUMENTS] = json.dumps(docs, ensure_ascii=False, separators=(",", ":"))
