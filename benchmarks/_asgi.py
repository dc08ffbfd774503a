"""Webhook POSTs handed straight to an ASGI app, the way an ASGI server hands them over.

The benchmarks that run gpubot in their own process stand in for Alertmanager: what their
HTTP client spends building a request (headers, URL, auth and redirect handling) would be
counted as gpubot's CPU. Here a request is one ASGI scope and one body message, and the
reply is read from the app's send calls; the app and its middleware run as under uvicorn.
"""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

Message = MutableMapping[str, Any]


class AsgiPoster:
    """POSTs bodies to `app` and returns the status and the reply's body."""

    def __init__(self, app: Any, *, host: str = "bench") -> None:
        self._app = app
        self._host = host.encode()

    async def post(
        self, path: str, body: bytes, *, content_type: str = "application/json"
    ) -> tuple[int, bytes]:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [
                (b"host", self._host),
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(body)).encode()),
            ],
            "client": ("127.0.0.1", 40000),
            "server": ("127.0.0.1", 80),
        }
        delivered = False
        done = asyncio.Event()
        status = 0
        chunks: list[bytes] = []

        async def receive() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await done.wait()  # as a server does: the client goes once the reply is sent
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            elif message["type"] == "http.response.body":
                chunks.append(bytes(message.get("body", b"")))
                if not message.get("more_body", False):
                    done.set()

        await self._app(scope, receive, send)
        done.set()
        return status, b"".join(chunks)
