"""gpu.reset through the NodeAgent port: refused while the GPU is in use, verified afterwards."""

from __future__ import annotations

from typing import Any

from gpubot.backends.simulated.scenarios import inject_xid

MakeHarness = Any  # the `harness` fixture in conftest.py

RESET = """
name: reset
triggers: [{command: reset}]
params:
  node: {type: node}
  drain: {type: string, default: "yes"}
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
  - id: drain
    action: node.drain
    args: {node: "{{ params.node }}"}
    approval: required
    when: "params.drain == 'yes'"
  - {id: reset, action: gpu.reset, args: {node: "{{ params.node }}", gpu: 3}, approval: required}
"""


async def _approve_all(h: Any, run_id: str) -> None:
    while True:
        await h.service.wait_idle()
        pending = [r for r in await h.store.approvals_for(run_id) if r.status.value == "pending"]
        if not pending:
            return
        await h.service.vote(approval_id=pending[0].id, user="U1", decision="approve")


async def test_reset_after_drain_restores_the_lost_gpu(harness: MakeHarness) -> None:
    h = harness(RESET)
    inject_xid(h.cluster, node="gpu-node-07", gpu=3)
    _plan, run = await h.service.start_command_run(
        runbook="reset", args={"node": "gpu-node-07"}, requested_by="U9", cluster="sim"
    )
    assert run is not None
    await _approve_all(h, run.id)
    assert (await h.store.get_run(run.id)).status.value == "succeeded"
    [gpu3] = [g for g in await h.cluster.agent.gpus(node="gpu-node-07") if g.index == 3]
    assert gpu3.healthy
    finished = [
        e for e in await h.store.events() if e.kind == "step.finished" and e.step == "reset"
    ]
    assert finished[0].result["was_lost"] is True


async def test_reset_is_refused_while_pods_hold_the_gpu(harness: MakeHarness) -> None:
    """Without the drain, a pod still holds GPU 3: the reset fails and says why."""
    h = harness(RESET)
    inject_xid(h.cluster, node="gpu-node-01", gpu=3)  # a training pod holds all 8 GPUs
    _plan, run = await h.service.start_command_run(
        runbook="reset",
        args={"node": "gpu-node-01", "drain": "no"},
        requested_by="U9",
        cluster="sim",
    )
    assert run is not None
    await _approve_all(h, run.id)
    [reset] = [s for s in await h.store.steps(run.id) if s.step_id == "reset"]
    assert reset.status.value == "failed"
    assert "held by ml-train/" in reset.error
    assert "drain the node before a reset" in reset.error
