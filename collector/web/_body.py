"""Answering before the request body has all arrived, without resetting the connection.

Routes answer before reading the whole body on purpose: 413 over the size limit (the rest is
never read), 401 before an unauthenticated body is read, 403 for a cross-site form. The server
then closes a connection whose client asked to close it (``Connection: close``, every
``urllib`` request, HTTP/1.0) with the rest of the body still arriving; a TCP close with
unread data is a reset, and the reset can destroy the answer in the client's receive buffer
before the client reads it: the client sees ECONNRESET, not the 413. On a keep-alive
connection the server instead reads the rest of the body after the answer, however long it
takes.

:class:`UnreadBodyDrain` makes both cases one, a lingering close: when a response is complete
and the body is not,

1. the answer says ``Connection: close`` (the connection cannot carry another request before
   the rest of this body is read, and is not worth reading it for);
2. the whole answer is sent, then the rest of the body is read and dropped until it ends, the
   client hangs up (it has read the answer), :data:`DRAIN_BYTES` more bytes have arrived or
   :data:`DRAIN_S` seconds have passed;
3. then the response completes and the server closes the connection.

A client that waits for ``100 Continue`` has sent no body, so nothing is read (reading would
make the server send ``100 Continue`` after the answer).
"""

from __future__ import annotations

import asyncio
import contextlib

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Enough for the bodies senders that write the whole body before reading send in practice (a
# 1 GiB body takes about a second on loopback, 10 s at 1 Gbit/s); the time bound keeps a client
# that trickles from holding the connection.
DRAIN_BYTES = 1 << 30
DRAIN_S = 10.0


class UnreadBodyDrain:
    """ASGI middleware: a lingering close for responses sent before the request body ended.

    Pure ASGI, and a pass-through for requests without a body (every GET), so the read API and
    the pages pay nothing; an OTLP request pays one wrapper call per received chunk.
    """

    def __init__(self, app: ASGIApp, *, drain_bytes: int = DRAIN_BYTES, drain_s: float = DRAIN_S) -> None:
        self.app = app
        self.drain_bytes = drain_bytes
        self.drain_s = drain_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = _body_state(scope) if scope["type"] == "http" else None
        if body is None:
            await self.app(scope, receive, send)
            return

        async def tracked_receive() -> Message:
            message = await receive()
            body.saw(message)
            return message

        async def draining_send(message: Message) -> None:
            if body.unread:
                if message["type"] == "http.response.start":
                    message = {**message, "headers": [*_without_connection(message), (b"connection", b"close")]}
                elif message["type"] == "http.response.body" and not message.get("more_body"):
                    await send({**message, "more_body": True})
                    if body.can_read:
                        await self._drain(receive)
                    message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app(scope, tracked_receive, draining_send)

    async def _drain(self, receive: Receive) -> None:
        async def drop() -> None:
            dropped = 0
            while dropped <= self.drain_bytes:
                message = await receive()
                if message["type"] != "http.request" or not message.get("more_body"):
                    return
                dropped += len(message.get("body", b""))

        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(drop(), self.drain_s)


class _BodyState:
    """How much of the request body the app has read."""

    def __init__(self, *, expects_continue: bool) -> None:
        self.unread = True
        self.started = False
        self.expects_continue = expects_continue

    def saw(self, message: Message) -> None:
        self.started = True
        if message["type"] != "http.request" or not message.get("more_body"):
            self.unread = False  # the last chunk, or the client is gone

    @property
    def can_read(self) -> bool:
        return self.started or not self.expects_continue


def _body_state(scope: Scope) -> _BodyState | None:
    """A tracker for the request's body, or ``None`` when it has none (one pass over the headers)."""
    has_body, expects_continue = False, False
    for key, value in scope["headers"]:
        if key == b"content-length":
            has_body = value.strip() not in (b"", b"0")
        elif key == b"transfer-encoding":
            has_body = True
        elif key == b"expect":
            expects_continue = value.lower() == b"100-continue"
    return _BodyState(expects_continue=expects_continue) if has_body else None


def _without_connection(message: Message) -> list[tuple[bytes, bytes]]:
    return [(k, v) for k, v in message.get("headers", []) if k.lower() != b"connection"]
