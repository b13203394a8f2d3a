"""A local HTTP receiver standing in for Alertmanager, a webhook endpoint and Slack."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    """Records every POST (path, JSON body); answers ``status`` (200 by default)."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, Any]] = []
        self.status = 200
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                receiver.posts.append((self.path, json.loads(body)))
                self.send_response(receiver.status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def bodies(self, path: str) -> list[Any]:
        return [body for p, body in self.posts if p == path]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
