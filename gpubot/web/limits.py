"""Work done before anyone is authenticated is bounded: body size and body time.

`BodyLimit` wraps every request: a declared Content-Length over the cap is refused before one
byte is read, a chunked body is refused the moment it passes the cap (413), and a body that
does not arrive in time gets 408. No handler can read, let alone parse, more than the cap.
An answer given before the request's body was read to its end (a wrong token, an unknown
route, a refusal here) says `Connection: close`, and the server closes the connection after
it: a client cannot keep trickling a body nobody will read. (The connection's own deadlines
and bound are gpubot.web.connections'.)
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable

from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gpubot.knowledge.outside_numbers import ascii_int

log = logging.getLogger(__name__)


class _BodyTooLarge(Exception):
    pass


class _BodyTooSlow(Exception):
    pass


_CLOSE = (b"connection", b"close")


class _Body:
    """How much of one request's body has been read."""

    def __init__(self, expected: bool) -> None:
        self.expected = expected  # no Content-Length and no Transfer-Encoding: no body
        self.total = 0
        self.complete = False
        self.deadline: float | None = None

    @property
    def unread(self) -> bool:
        return self.expected and not self.complete


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
        headers = Headers(scope=scope)
        declared = headers.get("content-length")
        if declared is not None:
            size = ascii_int(declared.strip())
            if size is None:
                await self._refuse(scope, send, 400, "Content-Length is not a number")
                return
            if size > self.max_bytes:
                await self._refuse(scope, send, 413, f"body larger than {self.max_bytes} bytes")
                return
        answered = False
        body = _Body(expected=declared not in (None, "0") or "transfer-encoding" in headers)

        async def tracked(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.start":
                answered = True
                headers = list(message.get("headers", ()))
                if body.unread and _CLOSE not in headers:  # the body was not all read
                    message = {**message, "headers": [*headers, _CLOSE]}
            await send(message)

        try:
            await self.app(scope, self._limited(receive, body), tracked)
        except ClientDisconnect:  # gone (or shed) before its body was read: nobody to answer
            log.info("client of %s %s went away", scope.get("method"), scope.get("path"))
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

    def _limited(self, receive: Receive, body: _Body) -> Receive:
        """`receive` that counts body bytes and holds the whole body to one deadline."""

        async def limited() -> Message:
            if body.complete:  # after the body: a disconnect, whenever it comes
                return await receive()
            loop = asyncio.get_running_loop()
            if body.deadline is None:
                body.deadline = loop.time() + self.read_timeout_s
            try:
                async with asyncio.timeout_at(body.deadline):
                    message = await receive()
            except TimeoutError:
                raise _BodyTooSlow from None
            if message["type"] == "http.request":
                body.total += len(message.get("body", b""))
                if body.total > self.max_bytes:
                    raise _BodyTooLarge
                body.complete = not message.get("more_body", False)
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
