"""A Slack Web API stand-in on a free loopback port: answers, records, and fails on demand."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web
from waiting import LIMIT_S

BOT_USER, BOT_ID, TEAM = "UBOT", "BBOT", "T0001"


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    at: float  # time.monotonic() on arrival
    status: int = 200

    @property
    def channel(self) -> str | None:
        value = self.args.get("channel")
        return None if value is None else str(value)


@dataclass
class Posted:
    channel: str
    ts: str
    thread_ts: str | None
    text: str
    blocks: list[dict[str, Any]]
    edits: int = 0


@dataclass
class Fault:
    method: str
    status: int
    retry_after: float | None
    times: int


@dataclass
class SlackStandin:
    url: str = ""
    calls: list[Call] = field(default_factory=list)
    messages: dict[str, Posted] = field(default_factory=dict)  # by ts
    usergroups: dict[str, list[str]] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    socket_frames: list[dict[str, Any]] = field(default_factory=list)  # what the bot sent
    _sockets: list[web.WebSocketResponse] = field(default_factory=list)
    _seq: int = 0

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    def response_url(self, name: str = "r1") -> str:
        return f"{self.url}/response/{name}"

    def fail(
        self, method: str, *, status: int = 429, retry_after: float | None = 1.0, times: int = 1
    ) -> None:
        """The next `times` calls of `method` ("*" for any) answer `status`."""
        self.faults.append(Fault(method, status, retry_after, times))

    def of(self, method: str, *, ok_only: bool = True) -> list[Call]:
        return [c for c in self.calls if c.method == method and (c.status == 200 or not ok_only)]

    def roots(self, channel: str | None = None) -> list[Posted]:
        return [
            m
            for m in self.messages.values()
            if m.thread_ts is None and (channel is None or m.channel == channel)
        ]

    def thread(self, root_ts: str) -> list[Posted]:
        return [m for m in self.messages.values() if m.thread_ts == root_ts]

    def text_of(self, message: Posted) -> str:
        return json.dumps(message.blocks) + message.text

    def _fault(self, method: str) -> Fault | None:
        for fault in self.faults:
            if fault.method in (method, "*") and fault.times > 0:
                fault.times -= 1
                return fault
        return None

    def _next_ts(self) -> str:
        self._seq += 1
        return f"{1_700_000_000 + self._seq}.{self._seq:06d}"

    async def handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args = await _args(request)
        call = Call(method, args, time.monotonic())
        self.calls.append(call)
        if (fault := self._fault(method)) is not None:
            call.status = fault.status
            headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after else {}
            error = "ratelimited" if fault.status == 429 else "internal_error"
            return web.json_response(
                {"ok": False, "error": error}, status=fault.status, headers=headers
            )
        return web.json_response(self._answer(method, args))

    def _answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {
                "ok": True,
                "url": "https://standin.slack.test/",
                "team": "Test",
                "team_id": TEAM,
                "user": "gpubot",
                "user_id": BOT_USER,
                "bot_id": BOT_ID,
                "is_enterprise_install": False,
            }
        if method == "chat.postMessage":
            ts = self._next_ts()
            channel = str(args["channel"])
            self.messages[ts] = Posted(
                channel,
                ts,
                args.get("thread_ts"),
                str(args.get("text", "")),
                _blocks(args.get("blocks")),
            )
            return {"ok": True, "channel": channel, "ts": ts, "message": {"ts": ts}}
        if method == "chat.update":
            message = self.messages.get(str(args.get("ts")))
            if message is None:
                return {"ok": False, "error": "message_not_found"}
            message.text = str(args.get("text", ""))
            message.blocks = _blocks(args.get("blocks"))
            message.edits += 1
            return {"ok": True, "channel": message.channel, "ts": message.ts}
        if method == "apps.connections.open":
            return {"ok": True, "url": self.url.replace("http://", "ws://") + "/socket"}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": self._next_ts()}
        if method == "usergroups.users.list":
            return {"ok": True, "users": self.usergroups.get(str(args.get("usergroup")), [])}
        if method == "files.getUploadURLExternal":
            return {"ok": True, "upload_url": f"{self.url}/upload/F001", "file_id": "F001"}
        if method == "files.completeUploadExternal":
            return {"ok": True, "files": [{"id": "F001", "title": args.get("title", "")}]}
        return {"ok": False, "error": "unknown_method"}

    async def response(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.calls.append(Call("response_url", body, time.monotonic()))
        return web.Response(text="ok")

    async def upload(self, request: web.Request) -> web.Response:
        self.calls.append(Call("upload", {"bytes": len(await request.read())}, time.monotonic()))
        return web.Response(text="OK")

    async def socket(self, request: web.Request) -> web.WebSocketResponse:
        """Socket Mode: hello, then whatever the test sends; the bot's acks are recorded."""
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._sockets.append(ws)
        await ws.send_json({"type": "hello", "num_connections": 1})
        async for frame in ws:
            if frame.type.name == "TEXT":
                self.socket_frames.append(json.loads(frame.data))
        return ws

    async def socket_send(self, envelope: dict[str, Any]) -> None:
        await self.wait_for(lambda: bool(self._sockets))
        await self._sockets[-1].send_json(envelope)

    async def close_sockets(self) -> None:
        for ws in self._sockets:
            await ws.close()

    async def wait_for(self, predicate: Any, *, within: float = LIMIT_S) -> None:
        deadline = time.monotonic() + within
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError("the stand-in never saw the expected calls")
            await asyncio.sleep(0.01)


def _blocks(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return list(json.loads(value))
    return list(value or [])


async def _args(request: web.Request) -> dict[str, Any]:
    args: dict[str, Any] = dict(request.query)
    if request.method == "POST":
        raw = await request.text()
        if request.content_type == "application/json" and raw:
            args.update(json.loads(raw))
        elif raw:
            args.update(dict(parse_qsl(raw)))
    return args


@asynccontextmanager
async def serve_standin() -> AsyncIterator[SlackStandin]:
    standin = SlackStandin()
    app = web.Application()
    app.router.add_route("*", "/api/{method}", standin.handle)
    app.router.add_post("/response/{name}", standin.response)
    app.router.add_post("/upload/{name}", standin.upload)
    app.router.add_get("/socket", standin.socket)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    standin.url = f"http://127.0.0.1:{port}"
    try:
        yield standin
    finally:
        await standin.close_sockets()
        await runner.cleanup()
