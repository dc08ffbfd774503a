"""hypothesis against POST /alertmanager and /agent/events on the real app and service."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from reliability_fuzz import LONG, SHORT, ErrorLog, assert_clean_reply, error_log, fuzz
from reliability_fuzz import webhook_bodies as bodies

from gpubot.backends.recording_chat import RecordingNotifier
from gpubot.config import load_settings
from gpubot.engine.clock import FakeClock
from gpubot.web.app import create_app
from gpubot.wiring import App, build_app

BUDGETS = [
    pytest.param(SHORT, id="short"),
    pytest.param(LONG, id="long", marks=pytest.mark.fuzz_long),
]
AGENT_TOKEN = "agent-token-for-fuzzing"


@dataclass
class Arena:
    """One service on SQLite, its web app, and the loop they run on."""

    runner: asyncio.Runner
    app: App
    client: httpx.AsyncClient
    errors: ErrorLog

    def post(self, path: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
        async def send() -> httpx.Response:
            reply = await self.client.post(path, content=body, headers=headers)
            await self.app.service.wait_idle()  # what the body started, finished
            return reply

        return self.runner.run(send())


@pytest.fixture
def arena(tmp_path: Path) -> Iterator[Arena]:
    settings = load_settings(
        None,
        store={"url": f"sqlite:///{tmp_path / 'fuzz.db'}"},
        slack={"mode": "off"},
        policy={"groups": {"oncall": {"users": ["U1"]}}},
    )
    with asyncio.Runner() as runner, error_log() as errors:

        async def start() -> tuple[App, httpx.AsyncClient]:
            app = build_app(settings, notifier=RecordingNotifier(), clock=FakeClock())
            web = create_app(app.service, max_body_bytes=64 * 1024, agent_token=AGENT_TOKEN)
            transport = httpx.ASGITransport(app=web)
            return app, httpx.AsyncClient(transport=transport, base_url="http://gpubot")

        app, client = runner.run(start())
        try:
            yield Arena(runner, app, client, errors)
        finally:
            runner.run(client.aclose())
            runner.run(app.aclose())


@pytest.mark.parametrize("profile", BUDGETS)
def test_alertmanager_webhook_never_fails_inside(arena: Arena, profile: str) -> None:
    """Any body (bytes, any JSON, Alertmanager payloads with fuzzed labels, times, statuses
    and fields): 200 when stored, else a 4xx with a one-line reason; never a 5xx, never an
    exception, neither in the handler nor in the processing it starts."""

    def check(body: bytes) -> None:
        reply = arena.post("/alertmanager", body, {"content-type": "application/json"})
        assert_clean_reply(reply)
        assert arena.errors.take() == []

    fuzz(profile, bodies, check)


@pytest.mark.parametrize("profile", BUDGETS)
def test_agent_events_never_fail_inside(arena: Arena, profile: str) -> None:
    """The node agents' XID endpoint takes the same bodies behind its token: same rules."""

    def check(body: bytes) -> None:
        headers = {"content-type": "application/json", "authorization": f"Bearer {AGENT_TOKEN}"}
        reply = arena.post("/agent/events", body, headers)
        assert_clean_reply(reply)
        assert arena.errors.take() == []

    fuzz(profile, bodies, check)
