"""BodyLimit: every body is capped in bytes and in time while a handler reads it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.types import Message

from gpubot.web.limits import BodyLimit


async def _echo_size(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A handler that reads its whole body and answers with its size."""
    size = 0
    while True:
        message = await receive()
        size += len(message.get("body", b""))
        if not message.get("more_body", False):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": str(size).encode()})


async def _never_reads(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 401, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def _scope(**headers: str) -> dict[str, Any]:
    return {
        "type": "http",
        "method": "POST",
        "path": "/slack/events",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }


class _Client:
    """Feeds body chunks to the app and keeps what it sends back."""

    def __init__(self, chunks: list[bytes], *, stall: bool = False) -> None:
        self.chunks = list(chunks)
        self.stall = stall
        self.reads = 0
        self.sent: list[Message] = []

    async def receive(self) -> Message:
        self.reads += 1
        if not self.chunks:
            if self.stall:
                await asyncio.Event().wait()  # a client that stops sending
            return {"type": "http.disconnect"}
        chunk = self.chunks.pop(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(self.chunks or self.stall)}

    async def send(self, message: Message) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int:
        return int(self.sent[0]["status"])


async def _run(app: Any, client: _Client, scope: dict[str, Any], **limits: Any) -> None:
    limited = BodyLimit(app, **{"max_bytes": 1024, "read_timeout_s": 5.0, **limits})
    await limited(scope, client.receive, client.send)


async def test_a_declared_length_over_the_cap_is_413_before_one_byte_is_read() -> None:
    client = _Client([b"x" * 10])

    await _run(_echo_size, client, _scope(**{"content-length": str(120 * 1024 * 1024)}))

    assert client.status == 413
    assert client.reads == 0


async def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_cap() -> None:
    client = _Client([b"x" * 512] * 1000)

    await _run(_echo_size, client, _scope())

    assert client.status == 413
    assert client.reads == 3  # 512, 1024, then 1536 > 1024: stop there, not after 1000 chunks


async def test_a_body_at_the_cap_reaches_the_handler_whole() -> None:
    client = _Client([b"x" * 512, b"x" * 512])

    await _run(_echo_size, client, _scope())

    assert client.status == 200
    assert client.sent[1]["body"] == b"1024"


async def test_a_body_that_stops_arriving_is_408() -> None:
    client = _Client([b"x" * 10], stall=True)

    await _run(_echo_size, client, _scope(), read_timeout_s=0.05)

    assert client.status == 408


async def test_a_handler_that_refuses_first_reads_nothing() -> None:
    """A wrong token is answered before the body is read: the cap costs nothing then."""
    client = _Client([b"x" * 512] * 1000)

    await _run(_never_reads, client, _scope())

    assert client.status == 401
    assert client.reads == 0


@pytest.mark.parametrize("declared", ["1e3", "-1", "", "0x10", "\u0662"])
async def test_a_content_length_that_is_not_ascii_digits_is_400(declared: str) -> None:
    client = _Client([b"{}"])
    scope = _scope()
    scope["headers"] = [(b"content-length", declared.encode())]

    await _run(_echo_size, client, scope)

    assert client.status == 400
