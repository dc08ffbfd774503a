"""build_app picks Slack only when it is on and has a token; user groups are cached."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from gpubot.backends.console import ConsoleNotifier
from gpubot.config import load_settings
from gpubot.errors import ConfigError
from gpubot.slack.listeners import UserGroups
from gpubot.slack.notifier import SlackNotifier
from gpubot.wiring import build_app


@pytest.fixture(autouse=True)
def _no_env_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("GPUBOT_", "SLACK_")):
            monkeypatch.delenv(name)


@pytest.mark.parametrize(
    ("mode", "token", "slack"),
    [("off", True, False), ("socket", False, False), ("socket", True, True), ("http", True, True)],
)
async def test_notifier_choice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, token: bool, slack: bool
) -> None:
    if token:
        monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-t")
        monkeypatch.setenv("SLACK_SIGNING_SECRET", "s")
    settings = load_settings(
        None,
        store={"url": f"sqlite:///{tmp_path}/w.db"},
        slack={
            "mode": mode,
            "api_url": "http://127.0.0.1:9/api/",
            "team_id": "T0001",
            "app_id": "A0001",
        },
    )
    app = build_app(settings)
    try:
        kind = SlackNotifier if slack else ConsoleNotifier
        assert isinstance(app.notifier, kind)
        assert (app.slack is not None) is slack
    finally:
        await app.aclose()


@pytest.mark.parametrize("ids", [{}, {"team_id": "T0001"}, {"app_id": "A0001"}])
def test_http_mode_needs_the_workspace_and_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ids: dict[str, str]
) -> None:
    """A public Request URL answers any workspace the app is installed in: without the
    ids to hold requests to, serve does not start (one line, no traceback)."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-t")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "s")
    settings = load_settings(
        None, store={"url": f"sqlite:///{tmp_path}/w.db"}, slack={"mode": "http", **ids}
    )
    with pytest.raises(ConfigError, match=r"slack.team_id and slack.app_id must be set"):
        build_app(settings)


def test_http_mode_needs_the_signing_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-t")
    settings = load_settings(
        None, store={"url": f"sqlite:///{tmp_path}/w.db"}, slack={"mode": "http"}
    )
    with pytest.raises(ConfigError, match="SLACK_SIGNING_SECRET"):
        build_app(settings)


class FakeClient:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.members = {"S1": ["U1"], "S2": ["U1", "U2"]}

    async def usergroups_users_list(self, *, usergroup: str) -> dict[str, Any]:
        self.calls.append(usergroup)
        return {"ok": True, "users": self.members.get(usergroup, [])}


async def test_usergroups_are_cached_for_the_ttl() -> None:
    now = [0.0]
    client = FakeClient()
    groups = UserGroups(client, ["S2", "S1"], ttl=60, monotonic=lambda: now[0])  # type: ignore[arg-type]
    assert await groups.of("U1") == ["S1", "S2"]
    assert await groups.of("U2") == ["S2"]
    assert client.calls == ["S1", "S2"]  # the second lookup came from the cache
    client.members["S1"] = ["U2"]
    now[0] = 61
    assert await groups.of("U2") == ["S1", "S2"]
    assert client.calls == ["S1", "S2", "S1", "S2"]
