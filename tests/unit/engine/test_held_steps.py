"""Cordons of a storm run side by side; held steps sleep until a slot can have freed; the
people in the channel get one summary of what is held, edited as it changes."""

from __future__ import annotations

import asyncio
from typing import Any

from gpubot.backends.simulated import SimulatedCluster, SimulatedKube
from gpubot.domain.control.safety_caps import BlastRadius, Policy
from gpubot.domain.runbooks.runs import RunStatus

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


class GatedKube(SimulatedKube):
    """Cordon calls wait until `expect` of them are in flight at once (or fail the test)."""

    def __init__(self, cluster: SimulatedCluster, *, expect: int) -> None:
        super().__init__(cluster)
        self.expect = expect
        self.in_flight = 0
        self.most = 0
        self.together = asyncio.Event()
        self.lists = 0

    async def list_nodes(self) -> Any:
        self.lists += 1
        return await super().list_nodes()

    async def set_unschedulable(self, **kw: Any) -> None:
        if kw.get("value") and not kw.get("dry_run"):
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            if self.in_flight >= self.expect:
                self.together.set()
            await asyncio.wait_for(self.together.wait(), timeout=10)
            self.in_flight -= 1
        await super().set_unschedulable(**kw)


def policy(count: int) -> Policy:
    return Policy(groups={}, blast=BlastRadius(max_cordoned_count=count, max_cordoned_fraction=1))


async def start(h: Any, node: str) -> str:
    _plan, run = await h.service.start_command_run(
        runbook="quarantine", args={"node": node}, requested_by="U1", cluster="sim"
    )
    assert run is not None
    return str(run.id)


async def test_cordons_of_different_nodes_run_at_once(harness: MakeHarness) -> None:
    """Four runs, cap four: the four cordon calls are in flight together (each waits for
    the others, so a global lock around the call would time out), and none lists nodes."""
    cluster = SimulatedCluster.default()
    gated = cluster.kube = GatedKube(cluster, expect=4)
    h = harness(CORDON, policy=policy(4), cluster=cluster)
    nodes = cluster.node_names()[:4]
    runs = [await start(h, node) for node in nodes]
    for run_id in runs:
        assert (await h.run_of(run_id)).status is RunStatus.SUCCEEDED
    assert gated.most == 4
    assert gated.lists == 0


async def test_held_steps_sleep_until_a_node_comes_back(harness: MakeHarness) -> None:
    """Cap 2 and 5 runs: 3 are held, in one summary. Ticks with nothing changed re-check
    none of them; an uncordon lets exactly one go ahead, and the summary follows."""
    cluster = SimulatedCluster.default()
    gated = cluster.kube = GatedKube(cluster, expect=1)
    h = harness(CORDON, policy=policy(2), cluster=cluster)
    nodes = cluster.node_names()[:5]
    runs = [await start(h, node) for node in nodes]
    await h.service.wait_idle()
    held = [r for r in await h.store.list_runs() if r.status is RunStatus.HELD]
    assert len(held) == 3
    summaries = h.notifier.of("summary")
    assert summaries[-1].text.startswith("Blast radius: 3 step(s) held")
    # Which two runs win the slots depends on scheduling; the summary names the other three.
    held_nodes = {r.target for r in held}
    assert len(held_nodes) == 3
    assert all(n in summaries[-1].text for n in held_nodes if n)
    cordoned = [n for n in nodes if n not in held_nodes]
    assert "is held" not in h.notifier.text()

    advanced: list[str] = []
    real_advance = h.service.executor.advance

    async def counting(run_id: str) -> Any:
        advanced.append(run_id)
        return await real_advance(run_id)

    h.service.executor.advance = counting  # type: ignore[method-assign]
    for _ in range(3):
        await h.service.background.tick()
        await h.service.wait_idle()
    assert advanced == []
    assert gated.lists == 0

    await cluster.kube.set_unschedulable(
        node=cordoned[0], value=False, actor="U1", reason="repaired"
    )
    await h.service.background.tick()
    await h.service.wait_idle()
    assert sorted(advanced) == sorted(r.id for r in held)
    statuses = [(await h.store.get_run(r)).status for r in runs]
    assert statuses.count(RunStatus.SUCCEEDED) == 3
    assert statuses.count(RunStatus.HELD) == 2
    assert h.notifier.of("summary")[-1].text.startswith("Blast radius: 2 step(s) held")
    assert sum(1 for n in await cluster.kube.list_nodes() if n.unschedulable) == 2
