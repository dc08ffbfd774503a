"""The agent's systemd unit for hosts outside Kubernetes (Slurm nodes) and its config example."""

from __future__ import annotations

import configparser
from pathlib import Path

from gpubot.config import load_settings

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "systemd"


def _unit() -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(DEPLOY / "gpubot-agent.service")
    return parser


def test_unit_runs_the_agent_with_the_example_config() -> None:
    service = _unit()["Service"]
    argv = service["ExecStart"].split()
    assert argv[1:4] == ["agent", "--config", "/etc/gpubot/agent/config.yaml"]
    assert service["Restart"] == "on-failure"


def test_tokens_come_from_systemd_credentials() -> None:
    """The example config reads exactly the credentials the unit loads, and no master."""
    text = (DEPLOY / "gpubot-agent.service").read_text()
    loaded = {
        line.split("=", 1)[1].split(":", 1)[0]
        for line in text.splitlines()
        if line.startswith("LoadCredential=")
    }
    settings = load_settings(DEPLOY / "agent.yaml")
    agent = settings.agent
    files = {agent.read_token_file, agent.mutate_token_file}
    assert files == {Path(f"/run/credentials/gpubot-agent.service/{n}") for n in loaded}
    assert agent.token_file is None
    assert agent.cluster == "hpc"
