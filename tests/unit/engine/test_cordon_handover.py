"""A leader hand-over in the middle of a cordon: the old leader's PATCH may land after the
new leader has counted the fleet. Each cordon is recorded RUNNING before it is sent, so the
new leader counts those nodes against the cap until the fleet view shows them."""

from __future__ import annotations

import asyncio
from typing import Any

from gpubot.backends.simulated import SimulatedCluster, SimulatedKube
from gpubot.domain.control.safety_caps import BlastRadius, Policy
from gpubot.domain.runbooks.runs import RunStatus, StepStatus

MakeHarness = Any  # the `harness` fixture in conftest.py

CORDON = """
name: quarantine
triggers: [{command: quarantine}]
params:
  node: {type: node}
target: node
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
"""


class SlowPatchKube(SimulatedKube):
    """The cordon PATCH of `slow` waits until the test lets it land."""

    def __init__(self, cluster: SimulatedCluster, *, slow: str) -> None:
        super().__init__(cluster)
        self.slow = slow
        self.sent = asyncio.Event()
        self.land = asyncio.Event()

    async def set_unschedulable(self, **kw: Any) -> None:
        if kw["node"] == self.slow and kw.get("value") and not kw.get("dry_run"):
            self.sent.set()
            await self.land.wait()
        await super().set_unschedulable(**kw)


def cap(count: int) -> Policy:
    return Policy(groups={}, blast=BlastRadius(max_cordoned_count=count, max_cordoned_fraction=1))


async def start(h: Any, node: str) -> str:
    _plan, run = await h.service.start_command_run(
        runbook="quarantine", args={"node": node}, requested_by="U1", cluster="sim"
    )
    assert run is not None
    return str(run.id)


async def test_the_new_leader_counts_the_old_leaders_cordon_still_landing(
    harness: MakeHarness,
) -> None:
    """Cap 2. The old leader's cordon of node A is recorded RUNNING and on its way when the
    new leader takes over. The new leader adopts A: of two new cordons (B, C) one runs and
    one is held, so when A's PATCH lands, two nodes are cordoned, never three."""
    cluster = SimulatedCluster.default()
    slow = cluster.kube = SlowPatchKube(cluster, slow="gpu-node-01")
    a, b, c = cluster.node_names()[:3]
    old = harness(CORDON, policy=cap(2), cluster=cluster)
    old_run = await start(old, a)
    await asyncio.wait_for(slow.sent.wait(), timeout=10)
    [state] = await old.store.steps(old_run)
    assert state.status is StepStatus.RUNNING  # durable before the PATCH went out

    new = harness(CORDON, policy=cap(2), cluster=cluster, store=old.store)
    assert await new.service.gate.adopt_cordons_in_flight() == 1
    runs = [await start(new, node) for node in (b, c)]
    await new.service.wait_idle()
    statuses = sorted([(await new.store.get_run(r)).status.value for r in runs])
    assert statuses == [RunStatus.HELD.value, RunStatus.SUCCEEDED.value]

    slow.land.set()  # the old leader's PATCH lands
    await old.service.wait_idle()
    fleet = await cluster.kube.gpu_fleet()
    assert a in fleet.cordoned
    assert len(fleet.cordoned) == 2


async def test_without_a_cordon_in_flight_nothing_is_adopted(harness: MakeHarness) -> None:
    """A finished cordon is the fleet view's to count: nothing is adopted, and a new leader
    fills the cap up to its limit."""
    cluster = SimulatedCluster.default()
    cluster.kube = SlowPatchKube(cluster, slow="none")
    a, b, c = cluster.node_names()[:3]
    old = harness(CORDON, policy=cap(2), cluster=cluster)
    assert (await old.run_of(await start(old, a))).status is RunStatus.SUCCEEDED
    new = harness(CORDON, policy=cap(2), cluster=cluster, store=old.store)
    assert await new.service.gate.adopt_cordons_in_flight() == 0
    runs = [await start(new, node) for node in (b, c)]
    await new.service.wait_idle()
    statuses = sorted([(await new.store.get_run(r)).status.value for r in runs])
    assert statuses == [RunStatus.HELD.value, RunStatus.SUCCEEDED.value]
