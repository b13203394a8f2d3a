"""A small local LLM server speaking the OpenAI Chat Completions and Anthropic Messages protocols.

Used by ``infersight demo`` and by tests that need a real HTTP peer. Answers are deterministic
for a given request and seed; latency and error injection are configurable.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

# An answer's text is the first words of this paragraph: no phrase in it recurs, so an ordinary
# answer never reads as a repetition (a 30-word cycle said twice in 60 words did).
_ANSWER = (
    "The answer depends on your plan and region, so please check the billing page first. If the "
    "invoice still looks wrong, contact support with its number and we can refund duplicate charges "
    "quickly. Annual subscriptions renew on the date shown under account settings, while monthly ones "
    "follow each purchase. Taxes vary by country; receipts list them separately. Most refunds reach "
    "cards within five business days, although some banks take longer."
)
_WORDS = _ANSWER.split(" ")


class FakeLLM:
    """Start with :meth:`start`, stop with :meth:`stop`; ``url`` is the base URL to call.

    Args:
        latency_s: (min, max) seconds a response takes.
        error_rate: share of requests answered 429 (rate limited).
        server_error_rate: share answered 500.
        seed: makes latency and errors reproducible.
        stream_chunk_delay_s: pause between streamed chunks (``"stream": true`` requests are
            answered with server-sent events in the provider's own format); the first chunk
            comes after ``latency_s``.
        loop_rate: share of answers that fall into a repetition loop until max tokens.
        truncate_rate: share of JSON answers (requests with a JSON ``response_format``) cut off
            at max tokens.
    """

    def __init__(
        self,
        *,
        latency_s: tuple[float, float] = (0.02, 0.2),
        error_rate: float = 0.0,
        server_error_rate: float = 0.0,
        seed: int = 0,
        stream_chunk_delay_s: float = 0.0,
        loop_rate: float = 0.0,
        truncate_rate: float = 0.0,
    ) -> None:
        self.stream_chunk_delay_s = stream_chunk_delay_s
        self.loop_rate = loop_rate
        self.truncate_rate = truncate_rate
        self.latency_s = latency_s
        self.error_rate = error_rate
        self.server_error_rate = server_error_rate
        self._random = random.Random(seed)
        self._random_lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "call start() first"
        # an AF_INET server: typeshed's address type also covers AF_UNIX paths and bytes hosts
        host, port = cast("tuple[str, int]", self._server.server_address[:2])
        return f"http://{host}:{port}"

    def start(self) -> FakeLLM:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep the demo's terminal readable
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    request = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "body is not JSON"}})
                    return
                status, body = fake.answer(self.path, request)
                if status == 200 and request.get("stream"):
                    self._stream(fake.sse_events(self.path, request, body))
                else:
                    self._send(status, body)

            def _stream(self, events: Iterator[bytes]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                try:
                    for i, event in enumerate(events):
                        if i and fake.stream_chunk_delay_s:
                            time.sleep(fake.stream_chunk_delay_s)
                        self.wfile.write(event)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading (e.g. a stream guard): so does a provider

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def answer(self, path: str, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and JSON body for one request (also callable without HTTP)."""
        with self._random_lock:
            roll = self._random.random()
            quirk = self._random.random()
            delay = self._random.uniform(*self.latency_s)
            length = self._random.randint(8, 60)
        time.sleep(delay)
        if roll < self.error_rate:
            return 429, {"error": {"type": "rate_limit_error", "message": "rate limited"}}
        if roll < self.error_rate + self.server_error_rate:
            return 500, {"error": {"type": "server_error", "message": "upstream failure"}}
        model = str(request.get("model", "gpt-4o-mini"))
        messages = request.get("messages") or []
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages if isinstance(m, dict)) + 7
        text = " ".join(_WORDS[:length])
        finish = "stop"
        wants_json = (request.get("response_format") or {}).get("type") in ("json_object", "json_schema")
        if wants_json:
            text = json.dumps({"subject": "Your plan", "body": text, "tags": ["billing", "plan"]})
            if quirk < self.truncate_rate:
                text, finish = text[: len(text) // 2], "length"
        elif quirk < self.loop_rate:
            text = text + " " + " ".join(["Let me check that again for you."] * 20)
            finish, length = "length", length + 140
        tool = _called_tool(request)
        if tool is not None and not path.rstrip("/").endswith("/messages"):
            arguments = json.dumps({"query": text})
            call = {"id": "call_fake", "type": "function", "function": {"name": tool, "arguments": arguments}}
            return 200, {
                "id": "chatcmpl-fake", "object": "chat.completion", "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                             "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": length,
                          "total_tokens": prompt_tokens + length},
            }
        if path.rstrip("/").endswith("/messages"):
            return 200, {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn" if finish == "stop" else "max_tokens",
                "usage": {"input_tokens": prompt_tokens, "output_tokens": length},
            }
        return 200, {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": length,
                "total_tokens": prompt_tokens + length,
            },
        }

    def sse_events(self, path: str, request: dict[str, Any], body: dict[str, Any]) -> Iterator[bytes]:
        """The server-sent events that stream ``body``, one text token per content event."""
        if path.rstrip("/").endswith("/messages"):
            yield from _anthropic_events(body)
        else:
            include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
            yield from _openai_events(body, include_usage)


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def _called_tool(request: dict[str, Any]) -> str | None:
    """The tool a request makes the model call: its first tool's name, unless ``tool_choice`` is "none"."""
    tools = request.get("tools")
    if not isinstance(tools, list) or not tools or request.get("tool_choice") == "none":
        return None
    name = ((tools[0] or {}).get("function") or {}).get("name")
    return name if isinstance(name, str) else None


def _openai_events(body: dict[str, Any], include_usage: bool) -> Iterator[bytes]:
    base = {"id": body["id"], "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
    message = body["choices"][0]["message"]
    first = {"index": 0, "delta": {"role": "assistant", "content": "" if message["content"] is not None else None},
             "finish_reason": None}
    yield _sse({**base, "choices": [first]})
    for delta in _deltas(message):
        yield _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    finish = body["choices"][0]["finish_reason"]
    yield _sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if include_usage:
        yield _sse({**base, "choices": [], "usage": body["usage"]})
    yield b"data: [DONE]\n\n"


def _deltas(message: dict[str, Any]) -> Iterator[dict[str, Any]]:
    # A tool call streams as its name, then its arguments a word at a time, as OpenAI sends it.
    for call in message.get("tool_calls") or ():
        function = call["function"]
        yield {"tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                               "function": {"name": function["name"], "arguments": ""}}]}
        for i, piece in enumerate(function["arguments"].split(" ")):
            yield {"tool_calls": [{"index": 0, "function": {"arguments": piece if i == 0 else " " + piece}}]}
    for i, word in enumerate((message["content"] or "").split(" ") if message["content"] is not None else ()):
        yield {"content": word if i == 0 else " " + word}


def _anthropic_events(body: dict[str, Any]) -> Iterator[bytes]:
    message = {**body, "content": [], "stop_reason": None,
               "usage": {"input_tokens": body["usage"]["input_tokens"], "output_tokens": 1}}
    yield _sse({"type": "message_start", "message": message}, "message_start")
    yield _sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
               "content_block_start")
    for i, word in enumerate(body["content"][0]["text"].split(" ")):
        token = word if i == 0 else " " + word
        yield _sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": token}},
                   "content_block_delta")
    yield _sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
    yield _sse({"type": "message_delta", "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": body["usage"]["output_tokens"]}}, "message_delta")
    yield _sse({"type": "message_stop"}, "message_stop")
