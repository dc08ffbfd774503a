"""`gpubot agent --driver simulated`: a real process on loopback, spoken to over HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

TOKEN = "cli-agent-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _gpubot(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpubot.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, "GPUBOT_AGENT_TOKEN": TOKEN}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gpubot.cli",
            "agent",
            "--driver",
            "simulated",
            "--node",
            "gpu-node-12",
            "--listen",
            f"127.0.0.1:{port}",
        ],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                if httpx.get(f"{url}/healthz", timeout=0.5).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        else:
            pytest.fail("the agent did not start")
        yield url
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_agent_serves_authenticated_reads_and_actions(agent: str) -> None:
    assert httpx.get(f"{agent}/v1/gpus").status_code == 401
    auth = {"authorization": f"Bearer {TOKEN}"}
    body = httpx.get(f"{agent}/v1/gpus", headers=auth).json()
    assert body["node"] == "gpu-node-12"
    assert len(body["gpus"]) == 8
    r = httpx.post(f"{agent}/v1/gpus/6/power-limit", json={"watts": 100}, headers=auth)
    assert r.status_code == 422
    assert "range 200-700 W" in r.json()["error"]
    r = httpx.post(f"{agent}/v1/gpus/0/reset", json={}, headers=auth)
    assert r.status_code == 409
    assert r.json()["kind"] == "in_use"


def test_agent_without_a_token_exits_with_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GPUBOT_AGENT_TOKEN"}
    done = _gpubot("agent", "--driver", "simulated", env=env)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "gpubot: error: the agent needs a bearer token: set GPUBOT_AGENT_TOKEN or agent.token_file"
    ]


def test_agent_with_a_bad_listen_address(tmp_path: Path) -> None:
    env = {**os.environ, "GPUBOT_AGENT_TOKEN": TOKEN}
    done = _gpubot("agent", "--driver", "simulated", "--listen", "nonsense", env=env)
    assert done.returncode == 2
    assert "HOST:PORT" in done.stderr
