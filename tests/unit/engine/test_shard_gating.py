"""Replicas that execute by shard, on one store: each advances only the runs of the keys it
leads (tick, follow and the executor's own check), a run recorded anywhere is started by its
shard's holder, and gaining a shard is a full look at once (what the last holder left)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from leadership import Flag

from gpubot.domain.runbooks.runs import RunStatus
from gpubot.domain.runbooks.shards import run_key, shard_of
from gpubot.engine.service import GpubotService

MakeHarness = Any  # the `harness` fixture in conftest.py

RUNBOOK = """
name: probe-node
triggers: [{command: probe-node}]
params: {node: {type: node}}
target: node
steps:
  - {id: act, action: test.probe, args: {key: "{{ params.node }}"}, approval: auto}
"""
SHARDS = 2


def replica(base: GpubotService, shard: int) -> tuple[GpubotService, Flag]:
    flag = Flag(True, owns=lambda key: shard_of(key, SHARDS) == shard)
    return GpubotService(replace(base.e, leadership=flag)), flag


def nodes_in(shard: int, count: int) -> list[str]:
    """Simulated nodes whose runs fall in `shard`."""
    found = [
        f"gpu-node-{i:02d}" for i in range(1, 41) if shard_of(f"sim/gpu-node-{i:02d}", 2) == shard
    ]
    return found[:count]


async def test_each_replica_advances_only_the_runs_of_its_shard(harness: MakeHarness) -> None:
    h = harness(RUNBOOK)
    zero, _ = replica(h.service, 0)
    one, flag_one = replica(h.service, 1)
    flag_one.leader = False  # replica one is down: it leads nothing
    mine, theirs = nodes_in(0, 2), nodes_in(1, 2)
    runs = {}
    for node in mine + theirs:  # every command lands on replica zero
        _plan, run = await zero.start_command_run(
            runbook="probe-node", args={"node": node}, requested_by="U1", cluster="sim"
        )
        assert run is not None
        assert run_key(run) == f"sim/{node}"
        runs[node] = run
    await zero.background.tick()
    await zero.wait_idle()
    assert sorted(h.probe.calls) == sorted(mine)  # its own shard only
    for node in theirs:
        assert (await h.store.get_run(runs[node].id)).status is RunStatus.RUNNING

    # Replica one comes up and gains its shard: its first look advances what waits there.
    flag_one.leader = True
    flag_one.terms += 1
    await one.background.follow()
    await one.wait_idle()
    assert sorted(h.probe.calls) == sorted(mine + theirs)
    assert set(h.probe.calls.values()) == {1}  # each node's step once
    for run in runs.values():
        assert (await h.store.get_run(run.id)).status is RunStatus.SUCCEEDED
