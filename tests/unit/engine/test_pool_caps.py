"""A pool's own blast radius, escalation thresholds and diagnostics level: its cap is
counted over its own nodes on top of the fleet's; its thresholds and level apply to its
nodes only, in the plan and in the run."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pytest

from gpubot.backends.simulated import SimulatedCluster
from gpubot.domain.control.pools import Pool
from gpubot.domain.control.safety_caps import BlastRadius, Policy, check_pool_drain
from gpubot.domain.gpus.escalation import EscalationPolicy
from gpubot.domain.runbooks.runs import RunStatus
from gpubot.engine.service import GpubotService

MakeHarness = Any  # the `harness` fixture in conftest.py
LABEL = "gpubot.io/pool"

CORDON = """
name: quarantine
triggers: [{command: quarantine}]
params:
  node: {type: node}
target: node
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
"""

HISTORY = """
name: history
triggers: [{command: history}]
params:
  node: {type: node}
target: node
steps:
  - {id: history, action: gpu.history, args: {node: "{{ params.node }}", xid: 79, gpu: 0},
     approval: auto}
"""

DIAG = """
name: diag
triggers: [{command: diag}]
params:
  node: {type: node}
target: node
steps:
  - {id: diag, action: gpu.diag, args: {node: "{{ params.node }}"}, approval: auto}
"""


def label(cluster: SimulatedCluster, nodes: list[str], value: str) -> None:
    with cluster.mutation() as state:
        for node in nodes:
            state.node(node).labels[LABEL] = value


async def start(h: Any, runbook: str, node: str) -> Any:
    plan, run = await h.service.start_command_run(
        runbook=runbook, args={"node": node}, requested_by="U1", cluster="sim"
    )
    assert run is not None
    return plan, await h.run_of(run.id)


async def test_a_pools_cap_counts_its_own_nodes_and_the_fleets_cap_still_holds(
    harness: MakeHarness,
) -> None:
    """Fleet cap 3, pool `small` cap 1: the second `small` node is held by the pool's cap
    while other nodes are still cordoned, until the fleet's cap holds the fifth."""
    cluster = SimulatedCluster.default()
    n = cluster.node_names()[:5]
    label(cluster, n[:2], "small")
    policy = Policy(
        groups={},
        blast=BlastRadius(max_cordoned_count=3, max_cordoned_fraction=1),
        pools=(Pool("small", match={LABEL: "small"}),),
        pool_blast={"small": BlastRadius(max_cordoned_count=1, max_cordoned_fraction=1)},
    )
    h = harness(CORDON, policy=policy, cluster=cluster)
    statuses = {}
    notes = {}
    for node in n:
        _plan, run = await start(h, "quarantine", node)
        statuses[node], notes[node] = run.status, run.note
    assert [statuses[x] for x in n] == [
        RunStatus.SUCCEEDED,
        RunStatus.HELD,  # the pool's cap: one of its two nodes
        RunStatus.SUCCEEDED,
        RunStatus.SUCCEEDED,
        RunStatus.HELD,  # the fleet's cap: three of five
    ]
    assert notes[n[1]].startswith("pool small: blast radius: 1 of 2 GPU nodes of pool small")
    assert notes[n[4]].startswith("blast radius: 3 of")
    cordoned = {x for x in n if (await cluster.kube.get_node(node=x)).unschedulable}
    assert cordoned == {n[0], n[2], n[3]}


async def test_a_pools_escalation_thresholds_apply_to_its_nodes_only(
    harness: MakeHarness,
) -> None:
    """Pool `strict` allows no reset (max_resets 0): its node's first XID 79 asks for a
    reboot; a node of no pool gets the global thresholds (a reset)."""
    cluster = SimulatedCluster.default()
    strict, other = cluster.node_names()[:2]
    label(cluster, [strict], "strict")
    policy = Policy(
        groups={},
        pools=(Pool("strict", match={LABEL: "strict"}),),
        pool_escalation={"strict": EscalationPolicy(max_resets=0)},
    )
    h = harness(HISTORY, policy=policy, cluster=cluster)
    _plan, run = await start(h, "history", strict)
    [step] = await h.store.steps(run.id)
    assert step.output["escalation"] == "reboot", step.output
    _plan, run = await start(h, "history", other)
    [step] = await h.store.steps(run.id)
    assert step.output["escalation"] == "reset", step.output


async def test_a_pools_diagnostics_level_is_planned_and_run_on_its_nodes(
    harness: MakeHarness,
) -> None:
    """Pool `deep` runs DCGM level 3; other nodes the configured level (1)."""
    cluster = SimulatedCluster.default()
    deep, other = cluster.node_names()[:2]
    label(cluster, [deep], "deep")
    with cluster.mutation() as state:  # drained: nothing holds the GPUs diagnostics load
        state.pods = [p for p in state.pods if p.node not in (deep, other)]
    policy = Policy(
        groups={},
        pools=(Pool("deep", match={LABEL: "deep"}),),
        pool_diag_level={"deep": 3},
    )
    h = harness(DIAG, policy=policy, cluster=cluster)
    plan, run = await start(h, "diag", deep)
    assert "level 3 (long)" in plan.steps[0].summary
    [step] = await h.store.steps(run.id)
    assert step.output["level"] == 3, (step.output, step.error)
    plan, run = await start(h, "diag", other)
    assert "level 1 (quick)" in plan.steps[0].summary


def test_a_pools_drain_cap_counts_the_drains_of_its_own_nodes() -> None:
    """One drain at a time in the pool: a second of its nodes waits, and the reason names
    the pool; a node already draining is not counted twice."""
    cap = BlastRadius(max_concurrent_drains=1)
    held = check_pool_drain(pool="small", policy=cap, draining={"a"}, node="b")
    assert held == ("pool small: blast radius: 1 drain(s) already in progress (a); the cap is 1")
    assert check_pool_drain(pool="small", policy=cap, draining={"a"}, node="a") is None
    assert check_pool_drain(pool="small", policy=cap, draining=set(), node="b") is None


def loaded_policy(**policy: Any) -> Policy:
    from gpubot.config import load_settings
    from gpubot.loaded_rules import build_policy

    return build_policy(load_settings(None, policy=policy))


async def test_a_changed_policy_says_which_pools_and_fields_changed(
    harness: MakeHarness, caplog: pytest.LogCaptureFixture
) -> None:
    """A start with a policy unlike the one last recorded logs and audits what changed: a
    pool's field, a pool added, a pool removed, a global key, the pools' order."""
    first = loaded_policy(
        pools=[
            {"name": "canary", "mode": "observe", "match": {LABEL: "canary"}},
            {"name": "old", "mode": "quarantine"},
            {"name": "train", "match": {LABEL: "train"}},
        ]
    )
    h = harness(CORDON, policy=first)
    await h.service.background.record_policy()
    second = loaded_policy(
        diag_level=2,
        pools=[
            {"name": "train", "match": {LABEL: "train"}, "blast_radius": {"max_cordoned_count": 1}},
            {"name": "canary", "mode": "quarantine", "match": {LABEL: "canary"}},
            {"name": "new", "mode": "observe"},
        ],
    )
    changed = GpubotService(replace(h.service.e, policy=second))
    with caplog.at_level(logging.WARNING, logger="gpubot"):
        await changed.background.record_policy()
    [_, event] = [e for e in await h.store.events() if e.kind == "policy.loaded"]
    assert event.result["changes"] == [
        "pools.new: added (observe)",
        "pools.old: removed",
        "diag_level: 1 -> 2",
        'pools.canary.mode: "observe" -> "quarantine"',
        "pools.train.blast_radius.max_concurrent_drains: set to 1",
        "pools.train.blast_radius.max_cordoned_count: set to 1",
        "pools.train.blast_radius.max_cordoned_fraction: set to 0.25",
        "pools order: canary, old, train -> train, canary, new",
    ]
    assert event.result["previous"] == first.digest
    assert 'pools.canary.mode: "observe" -> "quarantine"' in event.reason
    [line] = [r for r in caplog.records if getattr(r, "event", "") == "policy.changed"]
    assert "pools.old: removed" in line.getMessage()
    assert f"({first.digest} -> {second.digest})" in line.getMessage()
