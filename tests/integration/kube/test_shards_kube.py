"""Replicas that split the execution of steps by shard, on real Leases of the real API server
and (for the caps they share) a real PostgreSQL schema: every shard is held by one replica
at every moment, each replica holds its fair share, a replica's shards move when it dies or
stops, and a storm spread over three replicas cordons each node once and never passes the
fleet's cordon cap."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from control_plane import REPO
from kube_cluster import Cluster
from kube_engine import CORDON_ONLY, cluster_bot

from gpubot.backends.kube import LeaseLeadership
from gpubot.backends.kube.shards import (
    HANDOVER_ROUNDS,
    ShardedLeadership,
    ShardLeases,
    member_lease_name,
)
from gpubot.backends.store.shared_caps import SqlSharedCaps
from gpubot.clock import FakeClock
from gpubot.domain.control.safety_caps import BlastRadius
from gpubot.domain.runbooks.runs import RunStatus

if str(REPO / "tests" / "reliability") not in sys.path:
    sys.path.insert(0, str(REPO / "tests" / "reliability"))

from reliability_procs import pg_schema

SHARDS = 6
RUNBOOK = CORDON_ONLY


def _replica(c: Cluster, identity: str, ns: str, clock: FakeClock, **kw: Any) -> ShardedLeadership:
    return ShardedLeadership(
        c.client(),
        identity=identity,
        shards=SHARDS,
        namespace=ns,
        lease_seconds=kw.pop("lease_seconds", 3),
        renew_seconds=kw.pop("renew_seconds", 1),
        clock=clock,
        forget_after=6,
    )


def _holders(replicas: dict[str, ShardedLeadership]) -> dict[int, list[str]]:
    """Shard → the replicas that would start its steps now."""
    found: dict[int, list[str]] = {i: [] for i in range(SHARDS)}
    for name, r in replicas.items():
        for i in r.held():
            found[i].append(name)
    return found


async def _rounds(
    replicas: dict[str, ShardedLeadership], clock: FakeClock, n: int, *, every: float = 1.0
) -> None:
    """`n` renewal rounds of every replica, `every` seconds apart; after each replica's round,
    no shard has two replicas that would start its steps."""
    for _ in range(n):
        for r in replicas.values():
            await r.round()
            assert all(len(h) <= 1 for h in _holders(replicas).values()), _holders(replicas)
        clock.advance(every)


async def test_three_replicas_share_the_shards_and_take_over_a_dead_ones(
    cluster: Cluster,
) -> None:
    ns = cluster.namespace("gpubot")
    clock = FakeClock(auto_advance=False)
    a = _replica(cluster, "gpubot-7d9f-a", ns, clock)
    replicas = {"a": a}
    await _rounds(replicas, clock, 1)
    assert sorted(a.held()) == list(range(SHARDS))  # alone: every shard
    assert a.term() == SHARDS  # each shard gained bumps the term

    replicas["b"] = _replica(cluster, "gpubot-7d9f-b", ns, clock)
    replicas["c"] = _replica(cluster, "gpubot-7d9f-c", ns, clock)
    await _rounds(replicas, clock, 3)
    holders = _holders(replicas)
    assert all(len(h) == 1 for h in holders.values()), holders  # every shard, once
    assert sorted(len(r.held()) for r in replicas.values()) == [2, 2, 2]
    # A round costs one LIST and a write per Lease held (its shards', its member Lease's),
    # however many shards there are: no read of each shard Lease.
    before = len(cluster.calls)
    await replicas["a"].round()
    calls = [(c.method, c.path.split("?")[0].rsplit("/", 1)[-1]) for c in cluster.calls[before:]]
    assert [m for m, _ in calls].count("GET") == 2, calls  # the LIST, the member Lease
    assert [m for m, _ in calls].count("PUT") == 1 + len(a.held()), calls
    assert not [n for m, n in calls if m == "GET" and "-shard-" in n], calls
    # Every key is led by exactly one replica.
    keys = [f"sim/gpu-node-{i:04d}" for i in range(300)]
    assert all(sum(r.leads(k) for r in replicas.values()) == 1 for k in keys)

    # c dies (no more renewals, nothing released): its shards move once its Leases expire.
    dead = replicas.pop("c")
    lost = dead.held()
    await _rounds(replicas, clock, 2)
    assert not dead.held()  # by its own clock it stopped leading before anyone took over
    assert all(i not in a.held() + replicas["b"].held() for i in lost)  # not yet expired
    await _rounds(replicas, clock, 4)
    holders = _holders(replicas)
    assert all(len(h) == 1 for h in holders.values()), holders
    assert sorted(len(r.held()) for r in replicas.values()) == [3, 3]
    # Unchanged for forget_after (6 s here), the dead replica's member Lease is deleted.
    await _rounds(replicas, clock, 2)
    names = {
        m.metadata.name
        for m in cluster.coordination.list_namespaced_lease(
            ns, label_selector="gpubot.io/lease-role=member"
        ).items
    }
    assert member_lease_name("gpubot-leader", "gpubot-7d9f-c") not in names
    assert member_lease_name("gpubot-leader", "gpubot-7d9f-a") in names

    # b stops (a rolling update): it gives its shards back, and a takes them at its next round.
    b = replicas.pop("b")
    await b.stop()
    await _rounds(replicas, clock, 1)
    assert sorted(a.held()) == list(range(SHARDS))
    members = cluster.coordination.list_namespaced_lease(
        ns, label_selector="gpubot.io/lease-role=member"
    )
    released = {m.metadata.name: m.spec.holder_identity for m in members.items}
    assert released[member_lease_name("gpubot-leader", "gpubot-7d9f-b")] is None


@pytest.mark.postgres
async def test_a_storm_over_three_replicas_cordons_each_node_once_within_the_cap(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Twelve nodes, a fleet cap of 5 cordoned at once, three replicas each executing its
    shards side by side and reserving cordon slots in the PostgreSQL schema they share."""
    nodes = [cluster.add_node(f"gpu-node-{i:02d}") for i in range(1, 13)]
    ns = cluster.namespace("gpubot")
    (tmp_path / "cordon-only.yaml").write_text(RUNBOOK)
    runbooks = (tmp_path / "cordon-only.yaml",)
    schema = pg_schema()
    clock = FakeClock(auto_advance=False)
    leases = {n: _replica(cluster, f"replica-{n}", ns, clock) for n in "abc"}
    stores = {n: schema.open() for n in leases}
    bots = {
        n: cluster_bot(
            cluster,
            stores[n],
            leadership=leases[n],
            runbooks=runbooks,
            blast=BlastRadius(max_cordoned_count=5, max_cordoned_fraction=1.0),
            shared_caps=SqlSharedCaps(stores[n]),
            identity=f"replica-{n}",
        )
        for n in leases
    }
    try:
        names = list(bots)
        for i, node in enumerate(nodes):  # each command lands on any replica
            bot = bots[names[i % 3]]
            _, run = await bot.service.start_command_run(
                runbook="cordon-only", args={"node": node}, requested_by="U1", cluster="sim"
            )
            assert run is not None
        await asyncio.gather(*(b.service.wait_idle() for b in bots.values()))
        # No replica holds a shard yet: the runs are recorded, nothing is sent.
        assert not [p for p in cluster.calls_of("PATCH", "/nodes/") if "dryRun" not in p]
        await _rounds(leases, clock, 3)
        assert sorted(len(r.held()) for r in leases.values()) == [2, 2, 2]
        # Every replica looks at once, so their cordons race for the last slots.
        for _ in range(2):
            await asyncio.gather(*(b.service.background.tick() for b in bots.values()))
            await asyncio.gather(*(b.service.wait_idle() for b in bots.values()))

        store = stores["a"]
        runs = await store.list_runs()
        assert len(runs) == 12
        cordoned = [n for n in nodes if cluster.node(n)["spec"].get("unschedulable")]
        assert len(cordoned) == 5  # the cap, across the replicas
        patches = Counter(
            n for n in nodes for p in cluster.calls_of("PATCH", f"/nodes/{n}") if "dryRun" not in p
        )
        assert set(patches) == set(cordoned)
        assert set(patches.values()) == {1}  # each node once
        started = Counter(e.run_id for e in await store.events() if e.kind == "step.started")
        assert len(started) == 5
        assert set(started.values()) == {1}
        statuses = Counter(r.status for r in runs)
        assert statuses == {RunStatus.SUCCEEDED: 5, RunStatus.HELD: 7}
        # The replicas that executed them are the holders of their shards.
        by = {r.id: next(n for n in leases if leases[n].leads(f"sim/{r.target}")) for r in runs}
        assert len({by[run_id] for run_id in started}) >= 2
    finally:
        for s in stores.values():
            await s.close()
        schema.drop()


async def test_a_rebalance_gives_back_idle_shards_first_and_a_busy_one_only_after_waiting(
    cluster: Cluster,
) -> None:
    """A replica above its fair share keeps the shards with a step running here and gives
    back idle ones; when more are busy than its share, the extra busy ones go back after
    HANDOVER_ROUNDS rounds at most (a step may then be interrupted, and resumed by the
    next holder from live state)."""
    ns = cluster.namespace("gpubot")
    clock = FakeClock(auto_advance=False)
    a = _replica(cluster, "replica-a", ns, clock)
    await _rounds({"a": a}, clock, 1)
    assert len(a.held()) == SHARDS
    running = {0, 5}
    a.busy = lambda shard: shard in running
    replicas = {"a": a, "b": _replica(cluster, "replica-b", ns, clock)}
    await _rounds(replicas, clock, 3)
    assert set(a.held()) >= running  # its two running shards stayed here
    assert sorted(len(r.held()) for r in replicas.values()) == [3, 3]

    running = set(a.held())  # every shard it holds is busy now, and a third replica comes
    replicas["c"] = _replica(cluster, "replica-c", ns, clock)
    await _rounds(replicas, clock, 2)
    assert len(a.held()) == 3  # above its share of 2, waiting for a step to end
    await _rounds(replicas, clock, HANDOVER_ROUNDS)
    assert sorted(len(r.held()) for r in replicas.values()) == [2, 2, 2]
    assert all(len(h) == 1 for h in _holders(replicas).values())


async def test_replicas_of_two_settings_never_execute_side_by_side(cluster: Cluster) -> None:
    """A rolling update that turns shards on, off, or changes their number runs replicas of
    both settings at once: the leader's Lease decides which setting executes, and the other
    holds nothing until the first has gone."""
    ns = cluster.namespace("gpubot")
    clock = FakeClock(auto_advance=False)
    api = cluster.client()
    shards = ShardLeases(api, namespace=ns, group="gpubot-leader")

    def unsharded(identity: str) -> LeaseLeadership:
        return LeaseLeadership(
            api,
            identity=identity,
            namespace=ns,
            lease_seconds=3,
            renew_seconds=1,
            clock=clock,
            may_take=lambda: not shards.held(clock.now()),
        )

    # Shards turned on: an unsharded replica leads; a sharded one executes nothing.
    old = unsharded("old-0")
    assert await old.try_acquire_or_renew()
    new = _replica(cluster, "new-0", ns, clock)
    await new.start()
    try:
        assert new.held() == []
        assert new.blocked is not None
        assert "old-0" in new.blocked
        await old.stop()  # the old replica goes: it gives the leader's Lease back
        await new.round()  # ... which the new replica's leader loop takes
        await new.leader.try_acquire_or_renew()
        await new.round()
        assert sorted(new.held()) == list(range(SHARDS))
        assert new.blocked is None

        # Shards turned off again: the unsharded replica takes nothing while shards are
        # fresh, even with the leader's Lease free.
        await new.leader.release()
        back = unsharded("back-0")
        assert not await back.try_acquire_or_renew()
        assert not back.is_leader()

        # Another number of shards: a replica set to 4 takes none while 6 are held.
        four = ShardedLeadership(
            api, identity="four-0", shards=4, namespace=ns, lease_seconds=3, clock=clock
        )
        await four.round()
        assert four.held() == []
        assert four.blocked is not None
        assert "another shard count" in four.blocked
    finally:
        await new.stop()  # its shard Leases released: the others may go on
    assert await back.try_acquire_or_renew()
    await back.stop()
    await four.round()
    assert four.blocked is None
