"""`gpubot plan` on a Slurm cluster: real Slurm, the agent as a process over HTTP, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from slurm_cluster import SlurmCluster
from slurm_engine import agent_cluster, xid_body
from waiting import answers, wait_until

from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.domain.control.agent_tokens import node_token

MASTER = "slurm-cli-master"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def agent(slurm: SlurmCluster, tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """`gpubot agent --driver simulated` for gpu001 (its GPUs in a state file), on loopback:
    gpu001's NodeAddr in Slurm is 127.0.0.1, so the bot finds it there."""
    state = tmp_path / "gpus.json"
    agent_cluster(slurm.nodes, state_path=state)
    config = tmp_path / "agent.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "hpc", "backend": "simulated", "state_file": str(state)}],
                "agent": {"cluster": "hpc"},
            }
        )
    )
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBOT_")}
    env["GPUBOT_AGENT_READ_TOKEN"] = node_token(master=MASTER, node="gpu001", scope="read")
    env["GPUBOT_AGENT_MUTATE_TOKEN"] = node_token(master=MASTER, node="gpu001", scope="mutate")
    log = (tmp_path / "agent.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gpubot.cli",
            "agent",
            "--config",
            str(config),
            "--driver",
            "simulated",
            "--node",
            "gpu001",
            "--listen",
            f"127.0.0.1:{port}",
        ],
        env=env,
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until(
            lambda: answers(f"http://127.0.0.1:{port}/healthz"),
            "the agent to answer /healthz",
            proc=proc,
            output=tmp_path / "agent.log",
        )
        yield port, state
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def test_plan_xid79_for_a_slurm_node(
    slurm: SlurmCluster, agent: tuple[int, Path], tmp_path: Path
) -> None:
    port, state = agent
    job = slurm.sbatch("-w", "gpu001", "--gres=gpu:2", "-A", "bio", "--wrap", "sleep 600")
    wait_until(lambda: slurm.job_state(job) == "RUNNING", f"job {job} to run")
    from gpubot.backends.simulated import SimulatedCluster

    inject_xid(SimulatedCluster(name="hpc", state_path=state), node="gpu001", gpu=3)
    config = tmp_path / "bot.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "store": {"url": f"sqlite:///{tmp_path}/bot.db"},
                "clusters": [
                    {
                        "name": "hpc",
                        "backend": "slurm",
                        "agent": {"port": port},
                        "slurm": {"conf": str(slurm.conf)},
                    }
                ],
            }
        )
    )
    alert = tmp_path / "alert.json"
    alert.write_text(json.dumps(xid_body("gpu001", 3)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBOT_")}
    env["GPUBOT_AGENT_TOKEN"] = MASTER
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpubot.cli",
            "plan",
            "--alert",
            str(alert),
            "--config",
            str(config),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())  # the table wraps its last column
    assert "1 unhealthy (GPU 3: XID 79)" in out  # read from the agent over HTTP
    assert "drain gpu001 in Slurm (State=DRAIN" in out
    assert f"requeue job {job} (user root, account bio, partition gpu, 2 GPU(s)" in out
    # A plan changes nothing.
    assert slurm.node_state("gpu001") in ("mixed", "allocated")
