"""Socket Mode: `gpubot serve`'s Slack companion connects out and answers `/gpu` over it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from slack_standin import serve_standin

from gpubot.config import load_settings
from gpubot.slack.workspace import NOT_HERE
from gpubot.wiring import build_app


@pytest.fixture(autouse=True)
def _no_env_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("GPUBOT_", "SLACK_")):
            monkeypatch.delenv(name)


async def test_socket_mode_slash_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test-token")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-test-token")
    async with serve_standin() as standin:
        settings = load_settings(
            None,
            store={"url": f"sqlite:///{tmp_path}/socket.db"},
            slack={"mode": "socket", "api_url": standin.api_url},
        )
        app = build_app(settings)
        assert app.slack is not None
        assert app.slack.socket_mode
        try:
            await app.slack.start()
            assert standin.of("apps.connections.open")
            await standin.socket_send(
                {
                    "envelope_id": "env-1",
                    "type": "slash_commands",
                    "accepts_response_payload": True,
                    "payload": {
                        "team_id": "T0001",
                        "channel_id": "C0INCIDENTS",
                        "user_id": "U1",
                        "command": "/gpu",
                        "text": "xid 79",
                        "api_app_id": "A0001",
                        "response_url": standin.response_url(),
                        "trigger_id": "1.2.3",
                    },
                }
            )
            await standin.wait_for(lambda: bool(standin.of("response_url")))
            await standin.wait_for(lambda: bool(standin.socket_frames))
        finally:
            await app.aclose()
    assert standin.socket_frames[0]["envelope_id"] == "env-1"  # acked over the socket
    [answer] = standin.of("response_url")
    assert "XID 79" in json.dumps(answer.args)


async def test_socket_mode_refuses_another_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same check as HTTP mode, in bolt before any listener: a `/gpu` from another
    team is acked with an ephemeral refusal and never answered by the command; one from
    the configured team, sent after it, is."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test-token")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-test-token")
    async with serve_standin() as standin:
        settings = load_settings(
            None,
            store={"url": f"sqlite:///{tmp_path}/socket.db"},
            slack={"mode": "socket", "api_url": standin.api_url, "team_id": "T0001"},
        )
        app = build_app(settings)
        assert app.slack is not None
        try:
            await app.slack.start()
            for envelope, team in (("env-other", "T0OTHER"), ("env-mine", "T0001")):
                await standin.socket_send(
                    {
                        "envelope_id": envelope,
                        "type": "slash_commands",
                        "accepts_response_payload": True,
                        "payload": {
                            "team_id": team,
                            "channel_id": "C0INCIDENTS",
                            "user_id": "U1",
                            "command": "/gpu",
                            "text": "xid 79",
                            "api_app_id": "A0001",
                            "response_url": standin.response_url(envelope),
                            "trigger_id": f"1.2.{envelope}",
                        },
                    }
                )
            await standin.wait_for(lambda: bool(standin.of("response_url")))
            await standin.wait_for(lambda: len(standin.socket_frames) == 2)
        finally:
            await app.aclose()
    frames = {f["envelope_id"]: f for f in standin.socket_frames}
    assert frames["env-other"]["payload"] == {"response_type": "ephemeral", "text": NOT_HERE}
    [answer] = standin.of("response_url")  # the configured team's only
    assert "XID 79" in json.dumps(answer.args)
    counted = generate_latest(app.metrics.registry)
    assert b'gpubot_slack_foreign_requests_total{field="team"} 1.0' in counted
