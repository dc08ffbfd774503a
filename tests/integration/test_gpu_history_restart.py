"""The GPU health ledger outlives the process: `gpubot serve` records an XID 79, is SIGKILLed,
and `gpubot gpus history` (another process) reads it; a restarted serve records it once."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import yaml
from local_procs import free_port, wait_until
from waiting import answers

from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.simulated.scenarios import inject_xid

FIXTURE = Path(__file__).parents[1] / "fixtures" / "alertmanager" / "xid79_firing.json"
GPU_UUID = "GPU-9d33a01c-353c-631c-dfd4-3f371200339d"  # gpu-node-07 GPU 3 in the simulation


def test_history_survives_sigkill_of_serve(
    database: Any, tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    """serve takes the XID 79 alert, its run records the XID in the ledger and waits for the
    drain's approval; serve dies by SIGKILL. `gpubot gpus history` then lists the XID with
    its incident, GPU index and bus id; a new serve on the same database carries the run on
    without recording the XID a second time."""
    store = database.open()
    url = database.url
    if database.schema:
        url += f"?options=-csearch_path%3D{database.schema}"
    state = tmp_path / "sim.json"
    inject_xid(SimulatedCluster.default(name="sim", state_path=state), node="gpu-node-07", gpu=3)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "store": {"url": url},
                "clusters": [{"name": "sim", "backend": "simulated", "state_file": str(state)}],
                "policy": {"groups": {"oncall": {"users": ["U1"]}}},
                "slack": {"mode": "off"},
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUBOT_", "SLACK_"))}

    def serve() -> tuple[subprocess.Popen[bytes], int]:
        port = free_port()
        p = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gpubot.cli",
                "serve",
                "--config",
                str(cfg),
                "--port",
                str(port),
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        procs.append(p)

        wait_until(
            lambda: answers(f"http://127.0.0.1:{port}/healthz"),
            "gpubot serve to answer /healthz",
            proc=p,
        )
        return p, port

    def waiting() -> bool:
        runs = asyncio.run(store.list_runs())
        return len(runs) == 1 and runs[0].status.value == "waiting_approval"

    a, port = serve()
    reply = httpx.post(
        f"http://127.0.0.1:{port}/alertmanager",
        content=FIXTURE.read_bytes(),
        headers={"content-type": "application/json"},
    )
    assert reply.status_code == 200
    wait_until(waiting, "the run to wait for the drain's approval")
    os.kill(a.pid, signal.SIGKILL)
    a.wait(timeout=10)

    listed = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpubot.cli",
            "gpus",
            "history",
            "gpu-node-07",
            "--json",
            "--config",
            str(cfg),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    [gpu] = json.loads(listed.stdout)["gpus"]
    [run] = asyncio.run(store.list_runs())
    assert gpu["uuid"] == GPU_UUID
    assert [(e["kind"], e["xid"], e["incident_id"]) for e in gpu["events"]] == [
        ("xid", 79, run.incident_id)
    ]
    assert (gpu["events"][0]["gpu_index"], gpu["events"][0]["pci_bus_id"]) == (3, "0000:48:00.0")

    b, _ = serve()  # recovery on start-up: the run goes on waiting, the XID stays one row
    wait_until(waiting, "the restarted serve to take the run back")
    os.kill(b.pid, signal.SIGTERM)
    b.wait(timeout=30)
    assert len(asyncio.run(store.gpu_history(uuid=GPU_UUID))) == 1
