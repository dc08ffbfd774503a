"""gpu.reset with the alert's UUID: the named GPU is reset, another one at that index is not."""

from __future__ import annotations

from typing import Any

from gpubot.backends.simulated.scenarios import inject_xid

MakeHarness = Any  # the `harness` fixture in conftest.py
NODE, GPU = "gpu-node-07", 3
RESET = """
name: reset
triggers: [{command: reset}]
params:
  node: {type: node}
  uuid: {type: string, default: ""}
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
  - {id: drain, action: node.drain, args: {node: "{{ params.node }}"}, approval: required}
  - id: reset
    action: gpu.reset
    args: {node: "{{ params.node }}", gpu: 3, uuid: "{{ params.uuid }}"}
    approval: required
"""


async def _run(h: Any, uuid: str) -> tuple[str, str, str]:
    _plan, run = await h.service.start_command_run(
        runbook="reset", args={"node": NODE, "uuid": uuid}, requested_by="U9", cluster="sim"
    )
    assert run is not None
    while True:
        await h.service.wait_idle()
        pending = [r for r in await h.store.approvals_for(run.id) if r.status.value == "pending"]
        if not pending:
            break
        await h.service.vote(approval_id=pending[0].id, user="U1", decision="approve")
    [reset] = [s for s in await h.store.steps(run.id) if s.step_id == "reset"]
    plan = next(s for s in _plan.steps if s.id == "reset")
    return reset.status.value, reset.error, plan.summary


async def test_a_reset_naming_another_gpus_uuid_is_refused(harness: MakeHarness) -> None:
    h = harness(RESET)
    inject_xid(h.cluster, node=NODE, gpu=GPU)
    gpus = await h.cluster.agent.gpus(node=NODE)
    status, error, plan = await _run(h, gpus[GPU + 1].uuid)
    assert "will be refused" in plan
    assert status == "failed"
    assert f"{gpus[GPU].uuid}, not {gpus[GPU + 1].uuid}" in error
    assert (await h.cluster.agent.gpus(node=NODE))[GPU].lost  # nothing was reset


async def test_a_reset_naming_its_gpus_uuid_runs(harness: MakeHarness) -> None:
    h = harness(RESET)
    inject_xid(h.cluster, node=NODE, gpu=GPU)
    uuid = (await h.cluster.agent.gpus(node=NODE))[GPU].uuid
    status, error, _plan = await _run(h, uuid)
    assert (status, error) == ("succeeded", "")
    assert not (await h.cluster.agent.gpus(node=NODE))[GPU].lost
