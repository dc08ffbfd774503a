"""Stopping releases the Lease (client-go's ReleaseOnCancel): another replica takes over at
once, not after the lease duration; a Lease someone else holds is never released. On the real
API server, plus the stand-in for a write that fails."""

from __future__ import annotations

from typing import Any

from kube_cluster import Cluster
from kube_standin import KubeStandin, client_for

from gpubot.backends.kube import LeaseLeadership

NAME = "gpubot-leader"


def _lease(c: Cluster, identity: str, ns: str, **kw: Any) -> LeaseLeadership:
    # A lease duration far longer than the test: only a release lets another replica in.
    return LeaseLeadership(c.client(), identity=identity, namespace=ns, lease_seconds=3600, **kw)


async def test_stop_releases_and_another_replica_takes_over_at_once(cluster: Cluster) -> None:
    ns = cluster.namespace("gpubot")
    a, b = _lease(cluster, "a", ns), _lease(cluster, "b", ns)
    await a.start()
    assert await b.try_acquire_or_renew() is False
    await a.stop()
    assert not a.is_leader()
    spec = cluster.coordination.read_namespaced_lease(NAME, ns).spec
    assert not spec.holder_identity
    assert spec.lease_duration_seconds == 1
    assert await b.try_acquire_or_renew() is True
    spec = cluster.coordination.read_namespaced_lease(NAME, ns).spec
    assert spec.holder_identity == "b"
    assert spec.lease_transitions == 1
    await b.stop()


async def test_a_replica_that_does_not_hold_the_lease_leaves_it_alone(cluster: Cluster) -> None:
    ns = cluster.namespace("gpubot")
    a, b = _lease(cluster, "a", ns), _lease(cluster, "b", ns)
    assert await a.try_acquire_or_renew() is True
    assert await b.try_acquire_or_renew() is False
    await b.stop()
    assert await b.release() is False
    assert cluster.coordination.read_namespaced_lease(NAME, ns).spec.holder_identity == "a"
    assert a.is_leader()


async def test_a_release_that_fails_is_logged_not_raised(standin: KubeStandin) -> None:
    a = LeaseLeadership(client_for(standin), identity="a", lease_seconds=3600)
    assert await a.try_acquire_or_renew() is True
    standin.fail("PUT", "/leases/gpubot-leader", code=409)
    assert await a.release() is False
    assert not a.is_leader()
