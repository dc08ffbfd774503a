"""The real app in Slack HTTP mode against the Slack stand-in, and requests signed as Slack does."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import itertools
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from slack_standin import SlackStandin, serve_standin

from gpubot.backends.simulated import SimulatedCluster, simulated_state
from gpubot.config import load_settings
from gpubot.engine.clock import FakeClock
from gpubot.ports import Store
from gpubot.slack.app import SlackParts
from gpubot.web.app import create_app
from gpubot.wiring import App, build_app

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "alertmanager"
CHANNEL = "#gpu-incidents"
# Slack gives every request its own trigger_id, so two real requests never share a
# signature (a signed request is accepted once); the harness does the same.
_TRIGGERS = itertools.count(1)


def trigger_id() -> str:
    return f"1.2.{next(_TRIGGERS)}"


def sign(body: bytes, *, secret: str = SECRET, ts: int | None = None) -> dict[str, str]:
    """Slack's v0 request signature headers for `body`."""
    stamp = str(int(time.time()) if ts is None else ts)
    base = b"v0:" + stamp.encode() + b":" + body
    digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}


@dataclass
class SlackHarness:
    app: App
    client: httpx.AsyncClient
    standin: SlackStandin
    clock: FakeClock

    @property
    def slack(self) -> SlackParts:
        assert self.app.slack is not None
        return self.app.slack

    @property
    def sim(self) -> SimulatedCluster:
        return simulated_state(self.app.clusters["sim"])

    async def settle(self) -> None:
        """Let the service finish its runs and the outbox send everything."""
        for _ in range(3):
            await self.app.service.wait_idle()
            await self.slack.notifier.outbox.flush()

    async def events(self, body: bytes, headers: dict[str, str]) -> httpx.Response:
        return await self.client.post(
            "/slack/events",
            content=body,
            headers={"content-type": "application/x-www-form-urlencoded", **headers},
        )

    def slash_body(self, text: str, *, user: str = "U1", response: str = "r1") -> bytes:
        return urlencode(
            {
                "token": "legacy-unused",
                "team_id": "T0001",
                "team_domain": "test",
                "channel_id": "C0INCIDENTS",
                "channel_name": "gpu-incidents",
                "user_id": user,
                "user_name": user.lower(),
                "command": "/gpu",
                "text": text,
                "api_app_id": "A0001",
                "response_url": self.standin.response_url(response),
                "trigger_id": trigger_id(),
            }
        ).encode()

    async def slash(self, text: str, *, user: str = "U1", response: str = "r1") -> httpx.Response:
        body = self.slash_body(text, user=user, response=response)
        return await self.events(body, sign(body))

    def click_body(self, approval_id: str, *, user: str, approve: bool = True) -> bytes:
        payload: dict[str, Any] = {
            "type": "block_actions",
            "team": {"id": "T0001", "domain": "test"},
            "user": {"id": user, "username": user.lower(), "team_id": "T0001"},
            "api_app_id": "A0001",
            "token": "legacy-unused",
            "container": {"type": "message", "message_ts": "1.1", "channel_id": "C0INCIDENTS"},
            "trigger_id": trigger_id(),
            "channel": {"id": "C0INCIDENTS", "name": "gpu-incidents"},
            "message": {"ts": "1.1", "text": "approval"},
            "response_url": self.standin.response_url("click"),
            "actions": [
                {
                    "action_id": "gpubot_approve" if approve else "gpubot_deny",
                    "block_id": "gpubot_approval",
                    "value": approval_id,
                    "type": "button",
                    "action_ts": "1.3",
                }
            ],
        }
        return urlencode({"payload": json.dumps(payload)}).encode()

    async def click(self, approval_id: str, *, user: str, approve: bool = True) -> httpx.Response:
        body = self.click_body(approval_id, user=user, approve=approve)
        return await self.events(body, sign(body))

    def approval_ids(self) -> list[str]:
        ids = []
        for m in self.standin.messages.values():
            for block in m.blocks:
                if block.get("type") == "actions":
                    ids.append(block["elements"][0]["value"])
        return ids


@contextlib.asynccontextmanager
async def slack_harness(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    rate: float = 200.0,
    runbook_dirs: list[Path] | None = None,
    clock: FakeClock | None = None,
    store: Store | None = None,
    **overrides: Any,
) -> AsyncIterator[SlackHarness]:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test-token")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    async with serve_standin() as standin:
        settings = load_settings(
            None,
            store={"url": f"sqlite:///{tmp_path}/slack.db"},
            slack={
                "mode": "http",
                "team_id": "T0001",
                "app_id": "A0001",
                "channel": CHANNEL,
                "api_url": standin.api_url,
                "rate_per_second": rate,
            },
            policy=overrides.pop(
                "policy",
                {"groups": {"oncall": {"users": ["U1", "U2"], "usergroups": ["S0ONCALL"]}}},
            ),
            runbooks={"dirs": [str(d) for d in runbook_dirs or []]},
            **overrides,
        )
        clock = clock or FakeClock()
        app = build_app(settings, clock=clock, store=store)  # `store`: e.g. on PostgreSQL
        assert app.slack is not None, "slack.mode http with a bot token must build the Slack app"
        web = create_app(app.service, slack_events=app.slack.handle_http)
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=web), base_url="http://test")
        try:
            yield SlackHarness(app=app, client=client, standin=standin, clock=clock)
        finally:
            await client.aclose()
            await app.aclose()
