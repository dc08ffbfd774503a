"""Two real `gpubot serve` replicas on one Lease of the real API server, with PostgreSQL.

Both receive the same XID 79 alert; exactly one run is made and exactly one replica executes
it. Killing the leader with SIGKILL mid-drain hands the Lease over once it expires and the
other replica resumes the drain; SIGTERM stops the leader within its grace period, releases
the Lease at once and leaves the drain to the other replica. Nothing is done twice: the API
server's own request counters show one eviction accepted per pod and one write per quarantine
step. The runbook (cordon, taint, drain) needs no node agent, which keeps the test on the
Lease; the drain waits on a PodDisruptionBudget's real 429s and on a pod left terminating.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from kube_cluster import Cluster
from kube_replicas import (
    Counts,
    LeaseWatch,
    PgSchema,
    Procs,
    Replicas,
    delta,
    dump,
    pg_schema,
    request_counts,
    xid_alert,
)
from kubernetes.client.exceptions import ApiException

from gpubot.domain.runbooks.shards import shard_of

# A new leader acts on what the last one left within about a second (its first look as
# leader), well before the periodic tick of every 15 s.
RESUME_LIMIT = 8.0


@pytest.fixture
def pg() -> Iterator[PgSchema]:
    """A fresh PostgreSQL schema (skip, or fail with CI=true, when PostgreSQL is down)."""
    schema = pg_schema()
    yield schema
    schema.drop()


@pytest.fixture
def procs() -> Iterator[Procs]:
    started = Procs()
    yield started
    started.stop()


def scene(c: Cluster, *, blocking_pdb: bool) -> tuple[str, str]:
    """Four GPU nodes; on the third, two training pods under a PDB and a notebook under none.
    With `blocking_pdb` the budget allows no disruption, so their evictions get 429."""
    for i in range(1, 5):
        c.add_node(f"gpu-node-{i:02d}")
    node, ml = c.name("gpu-node-03"), c.namespace("ml")
    for i in range(2):
        c.add_pod(
            ml,
            f"train-{i}",
            node=node,
            gpus=4,
            owner=("ReplicaSet", "train-5c8d"),
            labels={"app": "train"},
        )
    c.add_pod(ml, "notebook", node=node, owner=("StatefulSet", "notebook"))
    c.add_pdb(ml, "train", selector={"app": "train"}, min_available=2 if blocking_pdb else 0)
    c.wait_pdb(ml, "train", healthy=2)
    return node, ml


def resumed(bots: Replicas) -> Callable[[], bool]:
    return lambda: bool(bots.stored().kinds("step.recovered", "drain"))


def quarantine_writes(counts: dict[tuple[str, str, str, str], int]) -> int:
    """Accepted writes to Nodes, dry runs aside (the plans send those)."""
    return sum(
        n
        for (verb, resource, code, dry), n in counts.items()
        if resource == "nodes" and verb in ("PATCH", "PUT") and code == "200" and not dry
    )


def evictions(counts: dict[tuple[str, str, str, str], int], code: str) -> int:
    return sum(
        n
        for (verb, resource, c, dry), n in counts.items()
        if resource == "pods/eviction" and verb == "POST" and c == code and not dry
    )


def test_both_receive_the_alert_one_run_one_replica_executes(
    cluster: Cluster, pg: PgSchema, procs: Procs, tmp_path: Path
) -> None:
    node, _ = scene(cluster, blocking_pdb=False)
    bots = Replicas(cluster, pg, procs, tmp_path, lease_seconds=3)
    bots.start()
    leader = bots.leader()
    follower = bots.other(leader.name)
    before = request_counts(cluster)

    assert bots.post_alert_to_both(xid_alert(node)) == [200, 200]
    bots.wait(lambda: bots.step_is("drain", "waiting_approval"), "the drain's approval request")

    seen = bots.stored()
    assert len(seen.runs) == 1, dump(seen.runs)
    assert len(seen.kinds("run.created")) == 1
    for step in ("cordon", "taint"):
        assert len(seen.kinds("step.started", step)) == 1, dump(seen.events)
        assert len(seen.kinds("step.finished", step)) == 1
        assert leader.executed(step), leader.output()
        assert not follower.executed(step), follower.output()
    assert len(seen.kinds("approval.requested", "drain")) == 1
    assert bots.lease() == (leader.name, 0)  # held from the start, never handed over
    sent = delta(before, request_counts(cluster))
    assert quarantine_writes(sent) == 2, dump(sent)  # one cordon, one taint
    spec = cluster.node(node)["spec"]
    assert spec["unschedulable"] is True
    assert [t["key"] for t in spec["taints"]] == ["gpubot.io/xid"]


def _drain_blocked(bots: Replicas, cluster: Cluster, node: str, ml: str, before: Counts) -> None:
    """Alert, approval, and the drain under way: the notebook evicted and left terminating
    (the node's kubelet is gone, as after XID 79), the training pods refused by their PDB."""
    assert bots.post_alert_to_both(xid_alert(node)) == [200, 200]
    bots.wait(bots.approve, "the drain's approval request")
    bots.wait(
        lambda: (
            cluster.pods_on(node) == [f"{ml}/train-0", f"{ml}/train-1"]
            and evictions(delta(before, request_counts(cluster)), "429") >= 2
        ),
        "the notebook's eviction and the PDB's 429s",
    )
    assert bots.step_is("drain", "running")


def _finish(bots: Replicas, cluster: Cluster, node: str, ml: str) -> None:
    """The budget is relaxed and the node's kubelet is back: it finishes each pod asked to
    terminate (deleted with grace period 0), and the drain ends."""
    cluster.policy.patch_namespaced_pod_disruption_budget(
        "train", ml, {"spec": {"minAvailable": 0}}
    )

    def kubelet_back_and_done() -> bool:
        for ref in set(cluster.pods_on(node, terminating=True)) - set(cluster.pods_on(node)):
            namespace, name = ref.split("/")
            with contextlib.suppress(ApiException):  # 404: gone already
                cluster.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
        return [r.status.value for r in bots.stored().runs] == ["succeeded"]

    bots.wait(kubelet_back_and_done, "the resumed run to succeed")
    assert cluster.pods_on(node, terminating=True) == []


def test_sigkill_of_the_leader_mid_drain_hands_over_and_the_run_resumes(
    cluster: Cluster, pg: PgSchema, procs: Procs, tmp_path: Path
) -> None:
    node, ml = scene(cluster, blocking_pdb=True)
    bots = Replicas(cluster, pg, procs, tmp_path, lease_seconds=3)
    bots.start()
    leader = bots.leader()
    heir = bots.other(leader.name)
    before = request_counts(cluster)
    _drain_blocked(bots, cluster, node, ml, before)

    procs.kill(leader.proc)  # SIGKILL: the Lease is neither renewed nor released
    took = bots.wait(lambda: bots.lease()[0] == heir.name, "the other replica to take the Lease")
    # Only once the Lease has gone unrenewed for its duration, as the heir observes it.
    assert took >= bots.lease_seconds - 1, took
    assert bots.lease() == (heir.name, 1)
    # The new leader resumes the drain at once, not at its next periodic tick (15 s).
    bots.wait(resumed(bots), "the heir to resume the drain", limit=RESUME_LIMIT)
    _finish(bots, cluster, node, ml)

    seen = bots.stored()
    sent = delta(before, request_counts(cluster))
    # Each pod evicted once: the notebook by the old leader (and waited for, not evicted
    # again, by the heir), the training pods by the heir once their budget allowed it.
    assert evictions(sent, "201") == 3, dump(sent)
    assert quarantine_writes(sent) == 2, dump(sent)
    for step in ("cordon", "taint"):
        assert len(seen.kinds("step.started", step)) == 1, dump(seen.events)
    assert len(seen.kinds("step.recovered", "drain")) == 1
    assert len(seen.kinds("step.finished", "drain")) == 1
    assert not seen.kinds("step.failed")
    assert sorted(seen.steps["drain"].output["evicted"]) == [f"{ml}/train-0", f"{ml}/train-1"]
    assert heir.executed("drain"), heir.output()
    assert not leader.executed("drain")


def test_sigterm_of_the_leader_mid_drain_releases_the_lease_and_the_other_finishes(
    cluster: Cluster, pg: PgSchema, procs: Procs, tmp_path: Path
) -> None:
    node, ml = scene(cluster, blocking_pdb=True)
    # A Lease that would take 15 s to expire: only a release lets the other replica in sooner.
    bots = Replicas(cluster, pg, procs, tmp_path, lease_seconds=15, grace_seconds=6)
    bots.start()
    leader = bots.leader()
    heir = bots.other(leader.name)
    before = request_counts(cluster)
    _drain_blocked(bots, cluster, node, ml, before)

    with LeaseWatch(cluster, bots.namespace) as lease:
        bots.wait(lambda: lease.holders == [leader.name], "the watch to see the Lease")
        began = time.monotonic()
        os.kill(leader.proc.pid, signal.SIGTERM)
        leader.proc.wait(timeout=bots.grace_seconds + 10)
        stopped = time.monotonic() - began
        assert stopped < bots.grace_seconds, f"{stopped:.1f}s\n{leader.output()}"
        assert leader.proc.returncode == 0, leader.output()
        took = bots.wait(lambda: lease.holders[-1] == heir.name, "the other to take the Lease")
    # Released (no holder) on the way out, so taken at once, not after the 15 s expiry.
    assert lease.holders == [leader.name, None, heir.name]
    assert took < bots.lease_seconds / 2, f"{took:.1f}s after the old leader exited"
    assert bots.lease() == (heir.name, 1)
    seen = bots.stored()
    assert len(seen.kinds("step.interrupted", "drain")) == 1, dump(seen.events)
    assert not seen.kinds("step.failed")
    bots.wait(resumed(bots), "the heir to resume the drain", limit=RESUME_LIMIT)
    _finish(bots, cluster, node, ml)

    seen = bots.stored()
    sent = delta(before, request_counts(cluster))
    assert evictions(sent, "201") == 3, dump(sent)
    assert quarantine_writes(sent) == 2, dump(sent)
    for step in ("cordon", "taint"):
        assert len(seen.kinds("step.started", step)) == 1, dump(seen.events)
    assert len(seen.kinds("step.finished", "drain")) == 1
    assert heir.executed("drain"), heir.output()
    assert not leader.executed("drain")


def test_sharded_replicas_split_the_nodes_and_a_killed_ones_shards_move(
    cluster: Cluster, pg: PgSchema, procs: Procs, tmp_path: Path
) -> None:
    """leader_election.shards: 4. Both replicas execute (each the nodes of its shards), every
    alert sent to both; after one is SIGKILLed the other takes its shards once their Leases
    expire and quarantines the next nodes too. Each node is cordoned and tainted once."""
    pool = [cluster.add_node(f"gpu-node-{i:02d}") for i in range(1, 41)]
    bots = Replicas(cluster, pg, procs, tmp_path, lease_seconds=3, shards=4)
    bots.start()
    bots.wait(lambda: len(shard_holders(cluster, bots)) == 4, "the shards to be taken")
    bots.wait(
        lambda: sorted(Counter(shard_holders(cluster, bots).values()).values()) == [2, 2],
        "each replica to hold two shards",
    )
    # Three nodes in each replica's shards first (which shard a node is in is a hash of
    # its name), then six more.
    holder = {
        int(name.rsplit("-shard-", 1)[1].split("-")[0]): who
        for name, who in shard_holders(cluster, bots).items()
    }
    on = {
        r.name: [n for n in pool if holder[shard_of(f"lab/{n}", 4)] == r.name]
        for r in bots.replicas
    }
    first = on["replica-a"][:3] + on["replica-b"][:3]
    nodes = first + [n for n in pool if n not in first][:6]
    before = request_counts(cluster)

    def quarantined(count: int) -> Callable[[], bool]:
        return lambda: len(bots.stored().kinds("approval.requested", "drain")) == count

    for i, node in enumerate(nodes[:6]):
        assert bots.post_alert_to_both(xid_alert(node, fingerprint=f"{i:016x}")) == [200, 200]
    bots.wait(quarantined(6), "six drains waiting for approval")
    executors = {r.name for r in bots.replicas if r.executed("cordon")}
    assert executors == {"replica-a", "replica-b"}, bots.procs.tail()

    victim = bots.named("replica-a")
    heir = bots.other(victim.name)
    procs.kill(victim.proc)  # SIGKILL: its Leases are neither renewed nor released
    bots.wait(
        lambda: set(shard_holders(cluster, bots).values()) == {heir.name},
        "the survivor to take every shard",
    )
    for i, node in enumerate(nodes[6:], start=6):  # the Service now sends only to the heir
        body = xid_alert(node, fingerprint=f"{i:016x}")
        assert httpx.post(f"{heir.url}/alertmanager", json=body, timeout=10).status_code == 200
    bots.wait(quarantined(12), "all twelve drains waiting for approval")

    seen = bots.stored()
    assert len(seen.runs) == 12
    for step in ("cordon", "taint"):
        started = Counter(e.run_id for e in seen.kinds("step.started", step))
        assert sorted(started.values()) == [1] * 12, dump(seen.events)
    sent = delta(before, request_counts(cluster))
    assert quarantine_writes(sent) == 24, dump(sent)  # one cordon and one taint per node
    assert all(cluster.node(n)["spec"]["unschedulable"] is True for n in nodes)


def shard_holders(cluster: Cluster, bots: Replicas) -> dict[str, str]:
    """Shard Lease → its holder now."""
    leases = cluster.coordination.list_namespaced_lease(
        bots.namespace, label_selector="gpubot.io/lease-role=shard"
    )
    return {
        lease.metadata.name: lease.spec.holder_identity
        for lease in leases.items
        if lease.spec.holder_identity
    }
