"""SIGKILL the bot between an approval and the end of a step: the restart finishes the run
without repeating the finished mutating step (SQLite and PostgreSQL, real processes)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import yaml
from local_procs import free_port, wait_until
from waiting import answers

from gpubot.backends.simulated import SimulatedCluster
from gpubot.domain.runbooks.runs import Run

FIXTURE = Path(__file__).parents[1] / "fixtures" / "alertmanager" / "xid79_firing.json"
RUNBOOK = """
name: crashy
description: cordon with approval, a pause to crash in, then a taint
triggers: [{alertname: GPUXidError, matchers: ['xid="79"']}]
params: {node: {type: node, default: "{{ alert.labels.Hostname }}"}}
target: node
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"},
     approval: required, approvers: oncall}
  - {id: pause, action: wait, args: {duration: 4s}, approval: auto, timeout: 30s}
  - {id: taint, action: node.taint,
     args: {node: "{{ params.node }}", key: gpubot.io/xid, value: "79"}, approval: auto}
"""
# Process B: another replica records the approval and executes; it is killed mid-run.
VOTER = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path
    from gpubot.config import load_settings
    from gpubot.wiring import build_app

    async def main():
        app = build_app(load_settings(Path(sys.argv[1])))
        [run] = await app.store.list_runs()
        request = (await app.store.approvals_for(run.id))[-1]
        await app.service.vote(approval_id=request.id, user="U1", decision="approve")
        await asyncio.sleep(3600)

    asyncio.run(main())
""")


def test_sigkill_mid_run_then_restart_finishes_without_repeating(
    database: Any, tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    store = database.open()  # creates the schema/tables; the test reads state through it
    url = database.url
    if database.schema:
        url += f"?options=-csearch_path%3D{database.schema}"
    (tmp_path / "rb").mkdir()
    (tmp_path / "rb" / "crashy.yaml").write_text(RUNBOOK)
    state = tmp_path / "sim.json"
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "store": {"url": url},
                "runbooks": {"builtin": False, "dirs": [str(tmp_path / "rb")]},
                "clusters": [{"name": "sim", "backend": "simulated", "state_file": str(state)}],
                "policy": {"groups": {"oncall": {"users": ["U1"]}}},
                "slack": {"mode": "off"},
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBOT_")}

    def spawn(*args: str) -> subprocess.Popen[bytes]:
        p = subprocess.Popen(
            [sys.executable, *args],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        procs.append(p)
        return p

    def serve() -> tuple[subprocess.Popen[bytes], int]:
        port = free_port()
        p = spawn("-m", "gpubot.cli", "serve", "--config", str(cfg), "--port", str(port))

        wait_until(
            lambda: answers(f"http://127.0.0.1:{port}/healthz"),
            "gpubot serve to answer /healthz",
            proc=p,
        )
        return p, port

    def runs() -> list[Run]:
        return asyncio.run(store.list_runs())

    def step(name: str) -> str:
        [run] = runs()
        return next(s.status.value for s in asyncio.run(store.steps(run.id)) if s.step_id == name)

    # A: the alert arrives; the run waits for approval; A dies.
    a, port = serve()
    reply = httpx.post(
        f"http://127.0.0.1:{port}/alertmanager",
        content=FIXTURE.read_bytes(),
        headers={"content-type": "application/json"},
    )
    assert reply.status_code == 200
    wait_until(
        lambda: len(runs()) == 1 and runs()[0].status.value == "waiting_approval", "approval"
    )
    os.kill(a.pid, signal.SIGKILL)
    a.wait(timeout=10)

    # B: approves, cordons, and is killed in the middle of the next step.
    b = spawn("-c", VOTER, str(cfg))
    wait_until(lambda: step("pause") == "running", "the pause step to start")
    os.kill(b.pid, signal.SIGKILL)
    b.wait(timeout=10)
    assert step("cordon") == "succeeded"
    assert step("taint") == "pending"

    # C: a fresh start recovers and finishes the run.
    c, _ = serve()
    wait_until(lambda: runs()[0].status.value == "succeeded", "the run to finish after restart")
    os.kill(c.pid, signal.SIGTERM)
    c.wait(timeout=15)

    events = asyncio.run(store.events())
    started = [(e.step, e.actor) for e in events if e.kind == "step.started"]
    assert started.count(("cordon", "U1")) == 1  # the finished mutating step never re-ran
    assert [s for s, _ in started].count("pause") == 2  # the interrupted read-only step did
    assert [s for s, _ in started].count("taint") == 1
    assert asyncio.run(store.verify()) == []
    sim = SimulatedCluster(state_path=state)
    node = asyncio.run(sim.kube.get_node(node="gpu-node-07"))
    assert node.unschedulable
    assert any(t.key == "gpubot.io/xid" for t in node.taints)
