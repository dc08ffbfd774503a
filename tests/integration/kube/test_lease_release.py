"""Stopping releases the Lease (client-go's ReleaseOnCancel): another replica takes over at
once, not after the lease duration; a Lease someone else holds is never released."""

from __future__ import annotations

from kube_standin import KubeStandin, client_for

from gpubot.backends.kube import LeaseLeadership

KEY = ("gpubot", "gpubot-leader")


async def test_stop_releases_and_another_replica_takes_over_at_once(
    standin: KubeStandin,
) -> None:
    # A lease duration far longer than the test: only a release lets b in.
    a = LeaseLeadership(client_for(standin), identity="a", lease_seconds=3600)
    b = LeaseLeadership(client_for(standin), identity="b", lease_seconds=3600)
    await a.start()
    assert await b.try_acquire_or_renew() is False
    await a.stop()
    assert not a.is_leader()
    spec = standin.leases[KEY]["spec"]
    assert not spec.get("holderIdentity")
    assert spec["leaseDurationSeconds"] == 1
    assert await b.try_acquire_or_renew() is True
    assert standin.leases[KEY]["spec"]["holderIdentity"] == "b"
    assert standin.leases[KEY]["spec"]["leaseTransitions"] == 1


async def test_a_replica_that_does_not_hold_the_lease_leaves_it_alone(
    standin: KubeStandin,
) -> None:
    a = LeaseLeadership(client_for(standin), identity="a", lease_seconds=3600)
    b = LeaseLeadership(client_for(standin), identity="b", lease_seconds=3600)
    assert await a.try_acquire_or_renew() is True
    assert await b.try_acquire_or_renew() is False
    await b.stop()
    assert await b.release() is False
    assert standin.leases[KEY]["spec"]["holderIdentity"] == "a"
    assert a.is_leader()


async def test_a_release_that_fails_is_logged_not_raised(standin: KubeStandin) -> None:
    a = LeaseLeadership(client_for(standin), identity="a", lease_seconds=3600)
    assert await a.try_acquire_or_renew() is True
    standin.fail("PUT", "/leases/gpubot-leader", code=409)
    assert await a.release() is False
    assert not a.is_leader()
