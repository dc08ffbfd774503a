"""The engine's "where things stand" at the endings the thread messages do not come from
clicks: a step whose effect is unknown after a crash, a failed step, and a dry run."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpubot.domain.runbooks.runs import StepStatus
from gpubot.engine.service import GpubotService

MakeHarness = Any  # the `harness` fixture in conftest.py
NODE = "gpu-node-04"
QUARANTINE = """
name: quarantine-probe
triggers: [{command: quarantine-probe}]
params:
  node: {type: node}
target: node
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
  - id: taint
    action: node.taint
    args: {node: "{{ params.node }}", key: gpubot.io/xid, value: "48", effect: NoSchedule}
    approval: auto
  - {id: mutate, action: test.probe, args: {key: m}, approval: auto}
"""


def posts(h: Any) -> list[str]:
    return [c.text for c in h.notifier.calls if c.kind == "post"]


async def test_unknown_effect_after_a_crash_says_where_the_node_stands(
    harness: MakeHarness,
) -> None:
    """A step left RUNNING whose check cannot tell: the "A human must check this run"
    message says the node is still cordoned and tainted, and gives release-node with the
    taint's XID."""
    h = harness(QUARANTINE)
    _plan, run = await h.service.start_command_run(
        runbook="quarantine-probe", args={"node": NODE}, requested_by="U1", cluster="sim"
    )
    assert run is not None
    await h.service.wait_idle()
    steps = await h.store.steps(run.id)
    await h.store.save_step(replace(steps[2], status=StepStatus.RUNNING, output={}))
    await h.store.update_run(run.id, status=run.status, note="", now=h.clock.now())
    h.probe.check_state = "unknown"
    restarted = GpubotService(h.service.e)  # a new process over the same store and cluster
    await restarted.background.recover()
    await restarted.wait_idle()
    assert (await h.store.get_run(run.id)).status.value == "needs_human"
    [said] = [p for p in posts(h) if p.startswith("A human must check this run")]
    assert f"This run cordoned {NODE}, added taint gpubot.io/xid=48:NoSchedule." in said
    assert f"{NODE} is still cordoned by gpubot, tainted gpubot.io/xid=48:NoSchedule" in said
    assert f"/gpu run release-node node={NODE} xid=48" in said


async def test_failed_step_ends_with_where_the_node_stands(harness: MakeHarness) -> None:
    """A step that fails stops the run: its summary says what is left on the node."""
    h = harness(QUARANTINE.replace("{key: m}", "{key: m, fail_times: 1, permanent: true}"))
    _plan, run = await h.service.start_command_run(
        runbook="quarantine-probe", args={"node": NODE}, requested_by="U1", cluster="sim"
    )
    assert run is not None
    await h.service.wait_idle()
    assert (await h.store.get_run(run.id)).status.value == "failed"
    [said] = [p for p in posts(h) if "Where things stand" in p]
    assert said.startswith(f"Run {run.id} (quarantine-probe) failed")
    assert f"/gpu run release-node node={NODE} xid=48" in said


async def test_dry_run_says_nothing_about_where_things_stand(harness: MakeHarness) -> None:
    """A dry run changes nothing, so its end carries no "where things stand"."""
    h = harness(QUARANTINE)
    _plan, run = await h.service.start_command_run(
        runbook="quarantine-probe",
        args={"node": NODE},
        requested_by="U1",
        cluster="sim",
        dry_run=True,
    )
    assert run is not None
    await h.service.wait_idle()
    assert any(p.startswith(f"Run {run.id}") for p in posts(h))
    assert not any("Where things stand" in p for p in posts(h))
