"""The fleet view on the real API server: one LIST, then the watch keeps it current."""

from __future__ import annotations

from kube_cluster import Cluster
from waiting import wait_until

from gpubot.backends.kube import KubernetesKubeApi
from gpubot.domain.fleet.cluster import FleetView


async def test_the_watch_keeps_the_fleet_current_without_listing_again(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    """GPU nodes (not the CPU node) and their cordons, as people change them: each change
    arrives through the watch; the cache listed once; an uncordon counts as a freed slot."""
    gpu = [cluster.add_node(f"gpu{i}") for i in range(3)]
    cpu = cluster.add_node("cpu", gpus=0)
    first = await kube.gpu_fleet()  # starts the cache; may answer by a LIST meanwhile
    assert set(gpu) <= first.gpu_nodes
    assert cpu not in first.gpu_nodes
    assert kube.nodes.wait_synced(15)

    def view() -> FleetView:
        found = kube.nodes.view()
        assert found is not None
        return found

    cluster.cordon(gpu[0])
    cluster.cordon(cpu)
    wait_until(lambda: gpu[0] in view().cordoned, "the cordon through the watch")
    fleet = await kube.gpu_fleet()
    assert fleet.live
    assert cpu not in fleet.cordoned
    released = fleet.released

    cluster.uncordon(gpu[0])
    wait_until(lambda: gpu[0] not in view().cordoned, "the uncordon")
    assert (await kube.gpu_fleet()).released == released + 1

    late = cluster.add_node("late")
    wait_until(lambda: late in view().gpu_nodes, "a node that joined")
    cluster.core.delete_node(late)
    wait_until(lambda: late not in view().gpu_nodes, "a node that left")
    assert kube.nodes.lists == 1


async def test_warm_fills_the_cache_before_the_first_alert(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    """serve warms each cluster before it listens: afterwards the fleet view is live from
    the cache and reading it sends no LIST (the first alert after a start pays nothing)."""
    node = cluster.add_node("warm0")
    assert await kube.warm(timeout_s=15) is True
    lists = kube.nodes.lists
    view = await kube.gpu_fleet()
    assert view.live
    assert node in view.gpu_nodes
    assert kube.nodes.lists == lists
