"""Socket Mode: `gpubot serve`'s Slack companion connects out and answers `/gpu` over it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from slack_standin import serve_standin

from gpubot.config import load_settings
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
