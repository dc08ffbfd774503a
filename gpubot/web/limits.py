"""Work done before anyone is authenticated is bounded: body size, body time, header time.

`BodyLimit` wraps every request: a declared Content-Length over the cap is refused before one
byte is read, a chunked body is refused the moment it passes the cap (413), and a body that
does not arrive in time gets 408. No handler can read, let alone parse, more than the cap.

`HeaderTimeoutProtocol` closes a connection whose request headers have not arrived within
the keep-alive timeout, so a client that opens connections and trickles bytes cannot hold
them forever.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable

import h11
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from gpubot.domain.codes import ascii_int

log = logging.getLogger(__name__)


class _BodyTooLarge(Exception):
    pass


class _BodyTooSlow(Exception):
    pass


class BodyLimit:
    """ASGI middleware: each HTTP request body is capped in bytes and in time while it is
    read, and it is read only when a handler asks (so a wrong token costs no body read)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_bytes: int,
        read_timeout_s: float,
        refused: Callable[[str, int], None] | None = None,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.read_timeout_s = read_timeout_s
        self.refused = refused  # told (path, status) of each request refused here

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None:
            size = ascii_int(declared.strip())
            if size is None:
                await self._refuse(scope, send, 400, "Content-Length is not a number")
                return
            if size > self.max_bytes:
                await self._refuse(scope, send, 413, f"body larger than {self.max_bytes} bytes")
                return
        answered = False

        async def tracked(message: Message) -> None:
            nonlocal answered
            answered = answered or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, self._limited(receive), tracked)
        except _BodyTooLarge:
            if not answered:
                await self._refuse(scope, send, 413, f"body larger than {self.max_bytes} bytes")
        except _BodyTooSlow:
            log.warning(
                "request body of %s %s not received within %gs",
                scope.get("method"),
                scope.get("path"),
                self.read_timeout_s,
            )
            if not answered:
                await self._refuse(
                    scope, send, 408, f"request body not received within {self.read_timeout_s:g}s"
                )

    async def _refuse(self, scope: Scope, send: Send, status: int, reason: str) -> None:
        if self.refused is not None:
            self.refused(str(scope.get("path", "")), status)
        await _refuse(send, status, reason)

    def _limited(self, receive: Receive) -> Receive:
        """`receive` that counts body bytes and holds the whole body to one deadline."""
        total = 0
        complete = False
        deadline: float | None = None

        async def limited() -> Message:
            nonlocal total, complete, deadline
            if complete:  # after the body: a disconnect, whenever it comes
                return await receive()
            loop = asyncio.get_running_loop()
            if deadline is None:
                deadline = loop.time() + self.read_timeout_s
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                raise _BodyTooSlow from None
            if message["type"] == "http.request":
                total += len(message.get("body", b""))
                if total > self.max_bytes:
                    raise _BodyTooLarge
                complete = not message.get("more_body", False)
            return message

        return limited


async def _refuse(send: Send, status: int, reason: str) -> None:
    body = json.dumps({"error": reason}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's line and headers (the
    keep-alive timeout): a connection that trickles bytes without finishing them is closed.
    uvicorn's own keep-alive timer stops at the first byte, so it cannot do this."""

    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._header_timer is not None and self.conn.their_state is not h11.IDLE:
            self._header_timer.cancel()  # the request line and headers are in
            self._header_timer = None

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_header_timer()  # the next request on this connection gets its own deadline

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._header_timer = self.loop.call_later(self.timeout_keep_alive, self._headers_late)

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()
