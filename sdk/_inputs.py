"""The model's input when the decorated call does not name it (no ``messages=``, ``input=``, ...).

The common shape, ``answer(question, docs)`` building its messages inside and calling the
provider's client, passes the decorator nothing it recognises. Two sources then, the exact one
first:

1. The provider's request, where the SDK can read it without patching the provider: an OpenAI
   or Anthropic stream keeps its HTTP response (``stream.response.request``), a raw response
   keeps ``http_request``, and their errors keep the request that failed (``APIError.request``).
   Its body is the JSON the model received, read as a ``messages=`` argument would be.
2. The decorated function's arguments, as Langfuse's ``@observe`` records them: the arguments
   the call passed (``self``/``cls`` left out) as one JSON object, the text of one user message.
   A plain response object (``ChatCompletion``) keeps nothing of its request, so this is what the
   README's pattern records when the call succeeds without streaming.

Both run only with content capture on, and on the export thread when the SDK owns the pipeline.
Converting the arguments stops at the content limit, so a huge argument costs no more than the
text kept of it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from ._content import input_messages
from ._guard import is_instance
from ._usage import _get

# A body this large is a document upload, not a prompt worth parsing on the export thread.
_MAX_BODY_BYTES = 8 << 20
_MAX_DEPTH = 8
# An exception's request may sit on the error the app's wrapper raised from.
_MAX_CHAIN = 4
_RECEIVERS = ("self", "cls")


def request_of_result(result: Any) -> Any:
    """The HTTP request behind a provider stream (``.response.request``) or raw response
    (``.http_request``), or ``None``."""
    request = _get(_get(result, "response"), "request")
    return request if request is not None else _get(result, "http_request")


def request_of_error(error: BaseException | None) -> Any:
    """The HTTP request a provider error carries (``openai.APIError.request`` and Anthropic's),
    looked for along the exception's cause chain, or ``None``."""
    for _ in range(_MAX_CHAIN):
        if error is None:
            return None
        request = _get(error, "request")
        if _body(request) is not None:
            return request
        error = error.__cause__ or error.__context__
    return None


def request_messages(request: Any) -> list[dict[str, Any]] | None:
    """GenAI messages from a provider request's JSON body (chat, messages and Responses APIs)."""
    body = _body(request)
    if body is None:
        return None
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return input_messages(document) if isinstance(document, dict) else None


def _body(request: Any) -> bytes | None:
    if request is None:
        return None
    content = _get(request, "content")  # httpx raises RequestNotRead for a streamed body: None then
    if isinstance(content, (bytes, bytearray)) and 0 < len(content) <= _MAX_BODY_BYTES:
        return bytes(content)
    return None


def arguments_messages(
    positional: tuple[str, ...], rest: str | None, args: tuple[Any, ...], kwargs: Mapping[str, Any], limit_chars: int
) -> list[dict[str, Any]] | None:
    """The call's arguments as one user message whose text is their JSON object; ``None`` without any.

    ``positional`` names the function's positional parameters in order and ``rest`` its
    ``*args`` parameter; ``kwargs`` are the keyword arguments (those read by name included).
    """
    bound = dict(zip(positional, args, strict=False))
    if rest is not None and len(args) > len(positional):
        bound[rest] = args[len(positional):]
    for name, value in kwargs.items():
        bound.setdefault(name, value)
    if positional and positional[0] in _RECEIVERS:
        bound.pop(positional[0], None)
    if not bound:
        return None
    try:
        text = json.dumps(_Converter(limit_chars).convert(bound, 0), ensure_ascii=False, separators=(",", ":"))
    except Exception:  # noqa: BLE001 - an argument mutated meanwhile, or a mapping whose items() raises:
        return None  # the app's objects, not the SDK's failure; the span goes without a prompt
    return [{"role": "user", "parts": [{"type": "text", "content": text}]}]


class _Converter:
    """Plain JSON values from the app's arguments, spending at most ``chars`` characters of text.

    Pydantic models and dataclasses become their fields; any other object is ``"<TypeName>"``,
    never its ``str()``, which may be expensive or print what the app did not mean to send.
    """

    def __init__(self, chars: int) -> None:
        self.left = chars

    def convert(self, value: Any, depth: int) -> Any:
        if self.left <= 0:
            return "…"
        kind = type(value)
        # Exact types first: arguments are mostly plain values, and the export thread pays per value.
        if kind is str:
            text = value[: self.left]
            self.left -= len(text) + 2
            return text
        if value is None or kind is bool or kind is int or kind is float:
            self.left -= 6
            return value
        if depth >= _MAX_DEPTH:
            return f"<{kind.__name__}>"
        if kind is dict:
            return self._mapping(value, depth)
        if kind is list or kind is tuple or kind is set or kind is frozenset:
            return self._items(value, depth)
        if is_instance(value, str):
            return self.convert(str.__str__(value), depth)
        if is_instance(value, Mapping):
            return self._mapping(value, depth)
        fields = self._fields(value)
        return f"<{kind.__name__}>" if fields is None else self._mapping(fields, depth)

    def _mapping(self, value: Mapping[Any, Any], depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, item in value.items():
            if self.left <= 0:
                break
            kind = type(key)
            name = key if kind is str else str(key) if kind in (int, float, bool) else f"<{kind.__name__}>"
            self.left -= len(name) + 4
            out[name] = self.convert(item, depth + 1)
        return out

    def _items(self, value: Any, depth: int) -> list[Any]:
        out = []
        for item in value:
            if self.left <= 0:
                out.append("…")
                break
            self.left -= 1
            out.append(self.convert(item, depth + 1))
        return out

    @staticmethod
    def _fields(value: Any) -> Mapping[str, Any] | None:
        dump = _get(type(value), "model_dump")
        if callable(dump):  # a pydantic model: its fields as the app declared them
            try:
                dumped = value.model_dump()
            except Exception:  # noqa: BLE001 - the app's model; unreadable is "<TypeName>", not a failure
                return None
            return dumped if isinstance(dumped, dict) else None
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: _get(value, f.name) for f in dataclasses.fields(value)}
        return None
