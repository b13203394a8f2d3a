"""A small local judge speaking OpenAI Chat Completions, with deterministic verdicts.

For ``infersight demo`` and the tests. The verdict comes from the answer being judged (the text
between ``<answer>`` and ``</answer>`` in the rendered rubric): a ``[[quality=N]]`` marker in it
sets the score to N; otherwise longer answers score higher (a stand-in heuristic for the demo).
Failures can be scripted per request (:meth:`FakeJudge.script`) or triggered by a
``[[judge=<failure>]]`` marker in the answer. Failures: ``429``, ``500``, ``503``, ``400``,
``401``, ``timeout`` (answers after ``slow_s``), ``garbage`` (prose, not JSON), ``badscore``
(score 7), ``html`` (an HTTP 200 whose body is not JSON at all), ``fenced`` (a valid verdict in
a Markdown code fence), ``nousage`` (a valid verdict without the ``usage`` object).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

_ANSWER = re.compile(r"<answer>\n?(.*?)\n?</answer>", re.DOTALL)
_QUALITY = re.compile(r"\[\[quality=([0-9]+)\]\]")
_FAILURE = re.compile(r"\[\[judge=([a-z0-9]+)\]\]")


class FakeJudge:
    """Start with :meth:`start`, stop with :meth:`stop`; ``url`` is the base URL (``.../v1``).

    Args:
        prompt_tokens, completion_tokens: the usage every answer reports (fixed, so costs are exact).
        slow_s: how long a ``timeout`` failure waits before answering.
    """

    def __init__(self, *, prompt_tokens: int = 1000, completion_tokens: int = 50, slow_s: float = 1.0) -> None:
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.slow_s = slow_s
        self.requests: list[dict[str, Any]] = []
        self._script: deque[str] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "call start() first"
        # an AF_INET server: typeshed's address type also covers AF_UNIX paths and bytes hosts
        host, port = cast("tuple[str, int]", self._server.server_address[:2])
        return f"http://{host}:{port}/v1"

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def script(self, failures: Iterable[str]) -> None:
        """Answer the next requests with these failures, in order, before judging normally again."""
        with self._lock:
            self._script.extend(failures)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self.requests.clear()

    def start(self) -> FakeJudge:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    request = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "body is not JSON"}})
                    return
                status, body = fake.answer(self.path, request)
                self._send(status, body)

            def _send(self, status: int, body: Any) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (a scripted timeout): nothing to tell it

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def answer(self, path: str, request: dict[str, Any]) -> tuple[int, Any]:
        """The status and body for one request (callable without HTTP too)."""
        if not path.rstrip("/").endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {path}"}}
        messages = request.get("messages") or []
        prompt = str(messages[-1].get("content", "")) if messages and isinstance(messages[-1], dict) else ""
        match = _ANSWER.search(prompt)
        answer = match.group(1) if match else ""
        with self._lock:
            self.requests.append(request)
            failure = self._script.popleft() if self._script else None
        if failure is None:
            marker = _FAILURE.search(answer)
            failure = marker.group(1) if marker else None
        if failure in ("429", "500", "503", "400", "401"):
            message = {"429": "rate limited", "500": "upstream failure", "503": "overloaded",
                       "400": "bad request", "401": "invalid api key"}[failure]
            return int(failure), {"error": {"message": message}}
        if failure == "timeout":
            time.sleep(self.slow_s)
        if failure == "html":
            return 200, b"<html><body>Gateway says hello</body></html>"
        if failure == "garbage":
            return 200, self._completion(request, "I think this answer is pretty good, maybe a 4 out of 5.")
        if failure == "badscore":
            return 200, self._completion(request, json.dumps({"score": 7, "reason": "off the scale"}))
        score = self._score(answer)
        verdict = json.dumps({"score": score, "reason": f"rule-based verdict {score}"})
        if failure == "fenced":
            verdict = f"```json\n{verdict}\n```"
        completion = self._completion(request, verdict)
        if failure == "nousage":
            del completion["usage"]
        return 200, completion

    @staticmethod
    def _score(answer: str) -> int:
        quality = _QUALITY.search(answer)
        if quality:
            return min(5, max(1, int(quality.group(1))))
        words = len(answer.split())
        return 1 if words == 0 else 2 if words < 5 else 3 if words < 20 else 4 if words < 60 else 5

    def _completion(self, request: dict[str, Any], content: str) -> dict[str, Any]:
        return {
            "id": "chatcmpl-judge",
            "object": "chat.completion",
            "model": str(request.get("model", "fake-judge")),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                      "total_tokens": self.prompt_tokens + self.completion_tokens},
        }
