"""`gpubot agent --driver simulated`: a real process on loopback, spoken to over HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from waiting import answers, wait_until

from gpubot.domain.control.agent_tokens import node_token

MASTER = "cli-agent-master"
NODE = "gpu-node-12"
TOKEN = node_token(master=MASTER, node=NODE, scope="mutate")
READ = node_token(master=MASTER, node=NODE, scope="read")


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
    env = {**os.environ, "GPUBOT_AGENT_READ_TOKEN": READ, "GPUBOT_AGENT_MUTATE_TOKEN": TOKEN}
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
        wait_for_agent(url, proc)
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
    read = {"authorization": f"Bearer {READ}"}
    assert httpx.get(f"{agent}/v1/gpus", headers=read).status_code == 200
    r = httpx.post(f"{agent}/v1/gpus/6/power-limit", json={"watts": 300}, headers=read)
    assert r.status_code == 403


def test_agent_without_its_tokens_exits_with_one_line(tmp_path: Path) -> None:
    """The master secret is not an agent credential: with only it, the agent does not start."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBOT_AGENT")}
    env["GPUBOT_AGENT_TOKEN"] = MASTER
    done = _gpubot("agent", "--driver", "simulated", env=env)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("gpubot: error: the agent needs its node's tokens")
    assert "gpubot agent-token --node NAME" in line


def test_agent_token_prints_the_derived_tokens() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBOT_AGENT")}
    env["GPUBOT_AGENT_TOKEN"] = MASTER
    both = _gpubot("agent-token", "--node", NODE, env=env)
    assert both.returncode == 0, both.stderr
    assert both.stdout.splitlines() == [
        f"GPUBOT_AGENT_READ_TOKEN={READ}",
        f"GPUBOT_AGENT_MUTATE_TOKEN={TOKEN}",
    ]
    one = _gpubot("agent-token", "--node", NODE, "--scope", "read", env=env)
    assert one.stdout == READ + "\n"
    bad = _gpubot("agent-token", "--node", "evil.example:80/x", env=env)
    assert bad.returncode == 2
    assert bad.stderr.startswith("gpubot: error: --node:")
    del env["GPUBOT_AGENT_TOKEN"]
    none = _gpubot("agent-token", "--node", NODE, env=env)
    assert none.returncode == 2
    assert "GPUBOT_AGENT_TOKEN" in none.stderr


def test_agent_with_a_bad_listen_address(tmp_path: Path) -> None:
    env = {**os.environ, "GPUBOT_AGENT_READ_TOKEN": READ}
    done = _gpubot("agent", "--driver", "simulated", "--listen", "nonsense", env=env)
    assert done.returncode == 2
    assert "HOST:PORT" in done.stderr


def wait_for_agent(url: str, proc: subprocess.Popen[str]) -> None:
    """Until the agent at `url` answers /healthz; fails at once, with its output, if it exits."""
    wait_until(lambda: answers(f"{url}/healthz"), "the agent to answer /healthz", proc=proc)
