"""The server's connections, on uvicorn's protocol with in-memory transports: which one a
new connection sheds at the bound, and the body deadline a handler cannot lift."""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from starlette.types import Receive, Scope, Send
from uvicorn.server import ServerState

from gpubot.web.connections import (
    ConnectionLimits,
    GuardedProtocol,
    connection_protocol,
    mark_authenticated,
)


class _Transport(asyncio.Transport):
    """Enough of a socket transport for uvicorn's h11 protocol; records what happens."""

    def __init__(self) -> None:
        super().__init__()
        self.closed = False
        self.gone = asyncio.Event()
        self.written = bytearray()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8080)}.get(
            name, default
        )

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True
        self.gone.set()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class _Server:
    """One protocol class, as `make_server` builds it, and the app behind it."""

    def __init__(self, app: Any, *, max_connections: int = 16, body_s: float = 5.0) -> None:
        self.shed: list[str] = []
        limits = ConnectionLimits(
            header_timeout_s=5.0,
            body_timeout_s=body_s,
            max_connections=max_connections,
            shed=self.shed.append,
        )
        self.protocol = connection_protocol(limits)
        self.config = uvicorn.Config(app, lifespan="off", log_config=None)
        self.config.load()
        self.state = ServerState()

    def connect(self, data: bytes = b"") -> tuple[GuardedProtocol, _Transport]:
        protocol = self.protocol(config=self.config, server_state=self.state, app_state={})
        transport = _Transport()
        protocol.connection_made(transport)
        if data:
            protocol.data_received(data)
        return protocol, transport


class _Held:
    """A handler that authenticates `/auth` requests, then waits without reading the body
    until the test ends (`release`)."""

    def __init__(self) -> None:
        self.marks: asyncio.Queue[None] = asyncio.Queue()
        self.released = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] == "/auth":
            mark_authenticated(scope)
            self.marks.put_nowait(None)
        await self.released.wait()
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


POST = b"POST /%s HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n"


async def test_at_the_bound_the_oldest_unauthenticated_connection_goes_first() -> None:
    """The authenticated request is the oldest, yet the oldest of the others is shed; a
    new connection that finds only authenticated ones is closed itself."""
    app = _Held()
    server = _Server(app, max_connections=16)
    bound = server.protocol.bound
    assert bound <= 16  # the open-file limit may lower it
    _, mine_t = server.connect(POST % b"auth")
    await app.marks.get()
    crowd = [server.connect(POST % b"other" if n % 2 else b"") for n in range(bound - 1)]
    newest, newest_t = server.connect()

    assert not mine_t.closed
    assert crowd[0][1].closed  # the oldest unauthenticated one: idle (n=0 said nothing)
    assert not any(t.closed for _, t in crowd[1:])
    assert not newest_t.closed
    assert server.shed == ["idle"]

    for protocol, transport in [*crowd, (newest, newest_t)]:  # only `mine` is left
        transport.close()
        protocol.connection_lost(None)
    everyone = [server.connect(POST % b"auth") for _ in range(bound - 1)]
    for _ in everyone:
        await app.marks.get()
    _, late_t = server.connect()
    assert late_t.closed
    assert server.shed[-1] == "over_bound"
    assert not mine_t.closed
    assert not any(t.closed for _, t in everyone)
    app.released.set()


async def test_a_body_not_sent_in_time_closes_the_connection_whatever_the_handler_does() -> None:
    """The handler never reads and never answers; the client sent 10 of 100 bytes. The
    connection is closed at the body timeout (and a second), not held by the handler."""
    app = _Held()
    server = _Server(app, body_s=0.05)
    loop = asyncio.get_running_loop()
    _, transport = server.connect(POST % b"other" + b"x" * 10)
    started = loop.time()
    await asyncio.wait_for(transport.gone.wait(), timeout=5)
    assert 1.0 <= loop.time() - started < 3.0
    app.released.set()
