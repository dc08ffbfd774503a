"""Leader election on a Lease: exactly one replica executes a step; a lost Lease stops it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kube_engine import make_bot
from kube_standin import KubeStandin, client_for

from gpubot.backends.kube import LeaseLeadership
from gpubot.backends.store import open_store

RUNBOOK = """
name: cordon-only
description: cordon a node
triggers: [{command: cordon-only}]
params: {node: {type: node}}
target: node
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
"""


async def test_one_lease_two_replicas_one_leader_and_takeover(standin: KubeStandin) -> None:
    a = LeaseLeadership(client_for(standin), identity="a", lease_seconds=1, renew_seconds=0.2)
    b = LeaseLeadership(client_for(standin), identity="b", lease_seconds=1, renew_seconds=0.2)
    assert await a.try_acquire_or_renew() is True
    assert await b.try_acquire_or_renew() is False
    assert (a.is_leader(), b.is_leader()) == (True, False)
    assert await a.try_acquire_or_renew() is True  # renewal with the version it read
    await a.stop()  # a stops renewing: b may take over once the Lease is stale
    assert not a.is_leader()
    await b.try_acquire_or_renew()
    await asyncio.sleep(1.1)
    assert await b.try_acquire_or_renew() is True
    lease = standin.leases[("gpubot", "gpubot-leader")]
    assert lease["spec"]["holderIdentity"] == "b"
    assert lease["spec"]["leaseTransitions"] == 1
    assert await a.try_acquire_or_renew() is False  # the old leader sees b and stands down
    assert not a.is_leader()


async def test_a_stale_write_gets_409_and_loses_leadership(standin: KubeStandin) -> None:
    a = LeaseLeadership(client_for(standin), identity="a", lease_seconds=5)
    assert await a.try_acquire_or_renew()
    standin.fail("PUT", "/leases/gpubot-leader", code=409)
    assert await a.try_acquire_or_renew() is False
    assert not a.is_leader()  # stops starting steps at once


async def test_two_bots_one_lease_exactly_one_executes_the_step(
    standin: KubeStandin, tmp_path: Path
) -> None:
    for i in range(1, 5):  # a fleet big enough that the blast radius allows one cordon
        standin.add_node(f"gpu-node-{i:02d}")
    (tmp_path / "cordon-only.yaml").write_text(RUNBOOK)
    store_a = open_store(f"sqlite:///{tmp_path}/ha.db")
    store_b = open_store(f"sqlite:///{tmp_path}/ha.db")
    lease_a = LeaseLeadership(client_for(standin), identity="a", lease_seconds=5)
    lease_b = LeaseLeadership(client_for(standin), identity="b", lease_seconds=5)
    assert await lease_a.try_acquire_or_renew()
    assert not await lease_b.try_acquire_or_renew()
    runbooks = (tmp_path / "cordon-only.yaml",)
    bot_a = make_bot(standin, store_a, leadership=lease_a, runbooks=runbooks)
    bot_b = make_bot(standin, store_b, leadership=lease_b, runbooks=runbooks)
    try:
        # The command lands on the follower: it records the run but starts no step.
        _, run = await bot_b.service.start_command_run(
            runbook="cordon-only", args={"node": "gpu-node-01"}, requested_by="U1", cluster="sim"
        )
        assert run is not None
        await bot_b.service.wait_idle()
        assert [c for c in standin.calls_of("PATCH", "/nodes/") if "dryRun=All" not in c] == []
        # Both replicas try to advance it; only the leader acts.
        await asyncio.gather(bot_a.service.tick(), bot_b.service.tick())
        await asyncio.gather(bot_a.service.wait_idle(), bot_b.service.wait_idle())
        assert (
            len(
                [
                    c
                    for c in standin.calls_of("PATCH", "/nodes/gpu-node-01")
                    if "dryRun=All" not in c
                ]
            )
            == 1
        )
        started = [e for e in await store_a.events() if e.kind == "step.started"]
        assert len(started) == 1
        assert (await store_a.get_run(run.id)).status.value == "succeeded"
    finally:
        await store_a.close()
        await store_b.close()
