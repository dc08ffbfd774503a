"""Leader election on a real Lease: exactly one replica executes a step; a lost Lease, or a
write that loses a race (the server's 409), stops it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kube_cluster import Cluster
from kube_engine import CORDON_ONLY, cluster_bot

from gpubot.backends.kube import LeaseLeadership
from gpubot.backends.store import open_store
from gpubot.clock import FakeClock

RUNBOOK = CORDON_ONLY


def _lease(c: Cluster, identity: str, ns: str, **kw: Any) -> LeaseLeadership:
    return LeaseLeadership(c.client(), identity=identity, namespace=ns, **kw)


async def test_one_lease_two_replicas_one_leader_and_takeover_when_stale(cluster: Cluster) -> None:
    ns = cluster.namespace("gpubot")
    clock = FakeClock(auto_advance=False)
    a = _lease(cluster, "a", ns, lease_seconds=1, renew_seconds=0.2, clock=clock)
    b = _lease(cluster, "b", ns, lease_seconds=1, renew_seconds=0.2, clock=clock)
    assert await a.try_acquire_or_renew() is True
    assert await b.try_acquire_or_renew() is False
    assert (a.is_leader(), b.is_leader()) == (True, False)
    assert await a.try_acquire_or_renew() is True  # renewal with the version it read
    # a stops renewing without releasing (it crashed): b takes over once the Lease is stale.
    assert await b.try_acquire_or_renew() is False  # b sees this version from now on
    clock.advance(0.9)
    assert a.is_leader()
    assert await b.try_acquire_or_renew() is False  # not yet stale by b's own clock
    clock.advance(0.2)
    assert not a.is_leader()  # its last renewal is older than the lease duration
    assert await b.try_acquire_or_renew() is True
    lease = cluster.coordination.read_namespaced_lease("gpubot-leader", ns)
    assert lease.spec.holder_identity == "b"
    assert lease.spec.lease_transitions == 1
    assert await a.try_acquire_or_renew() is False  # the old leader sees b and stands down
    assert not a.is_leader()


async def test_a_renewing_leader_keeps_the_lease_past_its_duration(cluster: Cluster) -> None:
    """The renewal loop runs on the clock: in 60 s of fake time (four lease durations) the
    leader renews every 5 s, so the other replica never sees the Lease stale."""
    ns = cluster.namespace("gpubot")
    clock = FakeClock(auto_advance=False)
    a = _lease(cluster, "a", ns, lease_seconds=15, renew_seconds=5, clock=clock)
    b = _lease(cluster, "b", ns, lease_seconds=15, renew_seconds=5, clock=clock)
    await a.start()
    try:
        assert await b.try_acquire_or_renew() is False
        puts = len([c for c in cluster.calls if c.method == "PUT"])
        await clock.run_for(60)
        assert len([c for c in cluster.calls if c.method == "PUT"]) - puts == 12
        assert clock.slept == [5] * 13  # twelve rounds done, the thirteenth waiting
        assert a.is_leader()
        assert await b.try_acquire_or_renew() is False
        lease = cluster.coordination.read_namespaced_lease("gpubot-leader", ns)
        assert lease.spec.holder_identity == "a"
    finally:
        await a.stop()
    assert await b.try_acquire_or_renew() is True  # released on stop: b need not wait


async def test_a_stale_write_gets_409_and_loses_leadership(cluster: Cluster) -> None:
    """Someone writes the Lease between a's read and a's update: the real server says 409."""
    ns = cluster.namespace("gpubot")
    a = _lease(cluster, "a", ns, lease_seconds=5)
    assert await a.try_acquire_or_renew()
    read = a.api.read_namespaced_lease

    def read_then_someone_writes(*args: Any, **kw: Any) -> Any:
        lease = read(*args, **kw)
        cluster.coordination.patch_namespaced_lease(
            "gpubot-leader", ns, {"metadata": {"labels": {"touched": "yes"}}}
        )
        return lease

    a.api.read_namespaced_lease = read_then_someone_writes  # type: ignore[method-assign]
    assert await a.try_acquire_or_renew() is False
    assert not a.is_leader()  # stops starting steps at once
    assert [c.status for c in cluster.calls if c.method == "PUT"][-1] == 409


async def test_two_bots_one_lease_exactly_one_executes_the_step(
    cluster: Cluster, tmp_path: Path
) -> None:
    nodes = [cluster.add_node(f"gpu-node-{i:02d}") for i in range(1, 5)]
    ns = cluster.namespace("gpubot")
    (tmp_path / "cordon-only.yaml").write_text(RUNBOOK)
    store_a = open_store(f"sqlite:///{tmp_path}/ha.db")
    store_b = open_store(f"sqlite:///{tmp_path}/ha.db")
    lease_a = _lease(cluster, "a", ns, lease_seconds=5)
    lease_b = _lease(cluster, "b", ns, lease_seconds=5)
    assert await lease_a.try_acquire_or_renew()
    assert not await lease_b.try_acquire_or_renew()
    runbooks = (tmp_path / "cordon-only.yaml",)
    bot_a = cluster_bot(cluster, store_a, leadership=lease_a, runbooks=runbooks)
    bot_b = cluster_bot(cluster, store_b, leadership=lease_b, runbooks=runbooks)

    def cordons() -> list[str]:
        return [p for p in cluster.calls_of("PATCH", f"/nodes/{nodes[0]}") if "dryRun" not in p]

    try:
        # The command lands on the follower: it records the run but starts no step.
        _, run = await bot_b.service.start_command_run(
            runbook="cordon-only", args={"node": nodes[0]}, requested_by="U1", cluster="sim"
        )
        assert run is not None
        await bot_b.service.wait_idle()
        assert cordons() == []
        # Both replicas try to advance it; only the leader acts.
        await asyncio.gather(bot_a.service.background.tick(), bot_b.service.background.tick())
        await asyncio.gather(bot_a.service.wait_idle(), bot_b.service.wait_idle())
        assert len(cordons()) == 1
        started = [e for e in await store_a.events() if e.kind == "step.started"]
        assert len(started) == 1
        assert (await store_a.get_run(run.id)).status.value == "succeeded"
        assert cluster.node(nodes[0])["spec"]["unschedulable"] is True
    finally:
        await store_a.close()
        await store_b.close()
