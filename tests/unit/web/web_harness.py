"""The real app in-process for the web tests: SQLite in tmp_path, the simulated cluster."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.exc import OperationalError

from gpubot.backends.recording_chat import RecordingNotifier
from gpubot.backends.simulated import SimulatedCluster, simulated_state
from gpubot.backends.store import open_store
from gpubot.config import load_settings
from gpubot.web.app import create_app
from gpubot.wiring import App, build_app


@pytest.fixture(autouse=True)
def _no_env_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings read GPUBOT_*/SLACK_* from the environment; a developer's shell must not leak in."""
    for name in list(os.environ):
        if name.startswith(("GPUBOT_", "SLACK_")):
            monkeypatch.delenv(name)


class FlakyStore:
    """A real SQL store whose named methods raise as a down database would, until healed."""

    def __init__(self, inner: Any, *, failing: Iterable[str]) -> None:
        self._inner = inner
        self.failing = set(failing)

    def __getattr__(self, name: str) -> Any:
        if name in self.failing:

            async def down(*args: Any, **kwargs: Any) -> Any:
                raise OperationalError(
                    "SELECT 1", {}, sqlite3.OperationalError("unable to open database file")
                )

            return down
        return getattr(self._inner, name)


@dataclass
class Harness:
    app: App
    client: httpx.AsyncClient
    notifier: RecordingNotifier
    flaky: FlakyStore | None = None

    async def post(self, body: bytes | dict[str, Any], **headers: str) -> httpx.Response:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return await self.client.post(
            "/alertmanager",
            content=content,
            headers={"content-type": "application/json", **headers},
        )

    @property
    def sim(self) -> SimulatedCluster:
        return simulated_state(self.app.clusters["sim"])

    async def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """/metrics parsed as Prometheus text: {(sample name, sorted labels): value}."""
        reply = await self.client.get("/metrics")
        assert reply.status_code == 200
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(reply.text)
            for s in family.samples
        }


MakeHarness = Callable[..., Awaitable[Harness]]


@pytest.fixture
async def make_harness(tmp_path: Path) -> AsyncIterator[MakeHarness]:
    """Builds the real app (SQLite in tmp_path, simulated cluster) and closes all of it after."""
    async with contextlib.AsyncExitStack() as stack:
        count = 0

        async def make(
            *,
            webhook_token: str | None = None,
            max_body_bytes: int = 1 << 20,
            failing: Iterable[str] = (),
        ) -> Harness:
            nonlocal count
            count += 1
            settings = load_settings(
                None,
                store={"url": f"sqlite:///{tmp_path}/t{count}.db"},
                policy={"groups": {"oncall": {"users": ["U1"]}}},
            )
            notifier = RecordingNotifier()
            store: FlakyStore | None = None
            if failing:
                store = FlakyStore(open_store(settings.store.url), failing=failing)
            app = build_app(settings, notifier=notifier, store=store)
            stack.push_async_callback(app.aclose)
            web = create_app(
                app.service, webhook_token=webhook_token, max_body_bytes=max_body_bytes
            )
            client = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=web), base_url="http://test"
            )
            stack.push_async_callback(client.aclose)
            return Harness(app=app, client=client, notifier=notifier, flaky=store)

        yield make


@pytest.fixture
async def harness(make_harness: MakeHarness) -> Harness:
    return await make_harness()
