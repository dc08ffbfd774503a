"""`gpubot agent --log-format json`: its log lines, /metrics and /readyz, then SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
from test_cli_agent import wait_for_agent

from gpubot.domain.control.agent_tokens import node_token

MASTER = "cli-agent-observed-master"
NODE = "gpu-node-12"  # GPUs 0-4 held, 5-7 free
MUTATE = node_token(master=MASTER, node=NODE, scope="mutate")
READ = node_token(master=MASTER, node=NODE, scope="read")
WRONG = "not-this-nodes-token-0123456789"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_agent_logs_json_lines_serves_metrics_and_readiness_and_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBOT_")}
    env |= {"GPUBOT_AGENT_READ_TOKEN": READ, "GPUBOT_AGENT_MUTATE_TOKEN": MUTATE}
    args = ["agent", "--driver", "simulated", "--node", NODE, "--listen", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpubot.cli", *args, "--log-format", "json"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_agent(url, proc)
        ready = httpx.get(f"{url}/readyz")
        assert (ready.status_code, ready.text) == (200, "NVML answers: 8 GPU(s)")
        wrong = {"authorization": f"Bearer {WRONG}"}
        assert httpx.get(f"{url}/v1/gpus", headers=wrong).status_code == 401
        auth = {"authorization": f"Bearer {MUTATE}"}
        assert httpx.post(f"{url}/v1/gpus/6/reset", json={}, headers=auth).status_code == 200
        metrics = httpx.get(f"{url}/metrics")  # no token
        assert metrics.status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    records = [json.loads(line) for line in err.splitlines()]  # every line is one JSON object
    events = [r.get("event") for r in records]
    for event in ("agent.start", "agent.ready", "agent.refused", "agent.reset"):
        assert event in events, err
    assert events[-2:] == ["agent.stopping", "agent.stopped"]
    start = records[events.index("agent.start")]
    assert start["level"] == "INFO"
    assert start["node"] == NODE
    assert "listening on 127.0.0.1" in start["message"]
    assert "mutating" in start["message"]
    for secret in (READ, MUTATE, WRONG):
        assert secret not in err
    text = metrics.text
    assert 'gpubot_agent_requests_total{outcome="unauthorized",route="/v1/gpus"} 1.0' in text
    assert 'gpubot_agent_gpu_resets_total{outcome="healthy"} 1.0' in text
