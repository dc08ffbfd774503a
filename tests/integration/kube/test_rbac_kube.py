"""The shipped RBAC under --authorization-mode=RBAC: the bot's ServiceAccount, bound to
deploy/rbac/clusterrole.yaml and its leader-election Role, runs the whole XID 79 runbook and
leads on its Lease without a single 401 or 403. (The chart's RBAC is held equal to that file by
the Helm tests.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kube_cluster import Cluster, kubelet_for, shipped_rules
from kube_engine import cluster_bot
from xid79_flow import quarantine_drain_reset_release, xid_scene

from gpubot.backends.kube import LeaseLeadership
from gpubot.backends.kube.shards import ShardedLeadership
from gpubot.backends.store import SqlStore, open_store


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlStore]:
    s = open_store(f"sqlite:///{tmp_path}/bot.db")
    yield s
    await s.close()


async def test_the_shipped_clusterrole_runs_the_xid79_runbook_without_a_403(
    rbac_cluster: Cluster, store: SqlStore
) -> None:
    c = rbac_cluster
    scene = xid_scene(c)
    bot_ns = c.namespace("gpubot")
    cluster_rules, lease_rules = shipped_rules()
    token = c.service_account(bot_ns, "gpubot", cluster_rules=cluster_rules, rules=lease_rules)
    lease = LeaseLeadership(c.client(token), identity="replica-a", namespace=bot_ns)
    assert await lease.try_acquire_or_renew()
    bot = cluster_bot(c, store, token=token, leadership=lease)
    with kubelet_for(c, scene.node):
        await quarantine_drain_reset_release(bot, c, scene)
    assert await lease.try_acquire_or_renew()  # the renewal is allowed too
    denied = [f"{call.method} {call.path}" for call in c.calls if call.status in (401, 403)]
    assert denied == [], "the shipped ClusterRole does not allow: " + "; ".join(denied)
    # Every kind of request the runbook makes was made, as the bot.
    for method, fragment in [
        ("GET", "/api/v1/nodes"),
        ("PATCH", f"/api/v1/nodes/{scene.node}"),
        ("GET", f"/api/v1/pods?fieldSelector=spec.nodeName%3D{scene.node}"),
        ("POST", "/eviction"),
        ("GET", "/apis/policy/v1/poddisruptionbudgets"),
        ("POST", "/api/v1/namespaces/default/events"),
        ("PUT", f"/apis/coordination.k8s.io/v1/namespaces/{bot_ns}/leases/gpubot-leader"),
    ]:
        assert c.calls_of(method, fragment), (method, fragment)


async def test_the_shipped_role_lets_sharded_replicas_lead_their_shards(
    rbac_cluster: Cluster,
) -> None:
    """With leader_election.shards, each replica also lists the member Leases and takes,
    renews and gives back shard Leases: all allowed by the shipped leader-election Role."""
    c = rbac_cluster
    bot_ns = c.namespace("gpubot")
    cluster_rules, lease_rules = shipped_rules()
    token = c.service_account(bot_ns, "gpubot", cluster_rules=cluster_rules, rules=lease_rules)
    replicas = [
        ShardedLeadership(
            c.client(token),
            identity=f"replica-{n}",
            shards=4,
            namespace=bot_ns,
            forget_after=0.001,  # a gone replica's member Lease is deleted at once
        )
        for n in "ab"
    ]
    for _ in range(3):
        for r in replicas:
            await r.round()
    assert sorted(len(r.held()) for r in replicas) == [2, 2]
    await replicas[0].stop()  # gives its shards and its member Lease back
    await replicas[1].round()
    assert len(replicas[1].held()) == 4
    await replicas[1].round()  # replica a's member Lease, released and unchanged: deleted
    assert c.calls_of("DELETE", f"/namespaces/{bot_ns}/leases/gpubot-leader-member-replica-a")
    denied = [f"{call.method} {call.path}" for call in c.calls if call.status in (401, 403)]
    assert denied == [], "the shipped Role does not allow: " + "; ".join(denied)
    assert c.calls_of("GET", f"/apis/coordination.k8s.io/v1/namespaces/{bot_ns}/leases?")
