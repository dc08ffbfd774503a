"""A cordon read from the watch cache on the real API server: the PATCH carries the version
the cache read, so a node that moved meanwhile is never overwritten blind, and a storm of
cordons sends one PATCH and one Event per node (no GET, one plan-time dry-run per 30 s)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from kube_cluster import Cluster
from waiting import wait_until

from gpubot.actions.base import ActionContext
from gpubot.actions.node import NodeParams, plan_cordon, run_cordon
from gpubot.backends.kube import KubernetesKubeApi
from gpubot.backends.simulated import SimulatedCluster
from gpubot.domain.fleet.cluster import CORDON_BY_ANNOTATION, CORDON_REASON_ANNOTATION, NodeInfo
from gpubot.engine.clock import FakeClock
from gpubot.errors import ConflictError
from gpubot.ports import ClusterPorts


def _ctx(kube: KubernetesKubeApi, *, dry_run: bool = False) -> ActionContext:
    sim = SimulatedCluster()
    return ActionContext(
        cluster=ClusterPorts("lab", kube, sim.agent, sim.metrics),
        clock=FakeClock(),
        actor="system",
        reason="gpubot incident i-1 run r-1 step cordon",
        dry_run=dry_run,
    )


def _cache_answers(
    kube: KubernetesKubeApi, monkeypatch: pytest.MonkeyPatch, seen: NodeInfo
) -> None:
    """The watch cache has not delivered the latest change yet: it still answers `seen`."""
    monkeypatch.setattr(kube.nodes, "node", lambda name: seen if name == seen.name else None)


async def _live(kube: KubernetesKubeApi, node: str) -> None:
    await kube.gpu_fleet()
    assert kube.nodes.wait_synced(15)
    wait_until(lambda: kube.nodes.node(node) is not None, "the node in the watch cache")


async def test_a_cordon_from_the_live_cache_sends_the_patch_and_the_event_and_no_get(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    """With the watch open, run_cordon reads the node from the cache: the only requests for
    that node are the PATCH (carrying the resourceVersion it read) and the Node Event."""
    gpu = cluster.add_node("gpu-a", gpus=8)
    await _live(kube, gpu)
    cluster.calls.clear()
    out = await run_cordon(_ctx(kube), NodeParams(node=gpu))
    assert await kube.flush_events(timeout_s=30) == 0  # the Event goes off the step's path
    assert out["was_cordoned"] is False
    assert out["foreign"] is False
    assert cluster.calls_of("GET", f"/nodes/{gpu}") == []
    assert len(cluster.calls_of("PATCH", f"/nodes/{gpu}")) == 1
    assert len(cluster.calls_of("POST", "/events")) == 1
    node = cluster.node(gpu)
    assert node["spec"]["unschedulable"] is True
    assert node["metadata"]["annotations"][CORDON_BY_ANNOTATION] == "system"


async def test_a_node_cordoned_by_someone_since_the_cache_read_answers_409_and_stays_theirs(
    cluster: Cluster, kube: KubernetesKubeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person cordons the node (with their reason) after the cache's copy was taken: the
    PATCH with the old version gets the server's 409, the node is read again, and the run
    reports their cordon as foreign instead of writing gpubot's annotations over theirs."""
    gpu = cluster.add_node("gpu-b", gpus=8)
    before = await kube.get_node(node=gpu)
    cluster.core.patch_node(
        gpu,
        {
            "spec": {"unschedulable": True},
            "metadata": {
                "annotations": {
                    CORDON_BY_ANNOTATION: "alice",
                    CORDON_REASON_ANNOTATION: "bad DIMM",
                }
            },
        },
    )
    _cache_answers(kube, monkeypatch, before)
    cluster.calls.clear()
    out = await run_cordon(_ctx(kube), NodeParams(node=gpu))
    assert await kube.flush_events(timeout_s=30) == 0  # the Event goes off the step's path
    assert [c.status for c in cluster.calls if c.method == "PATCH"] == [409]
    assert out == {"node": gpu, "was_cordoned": True, "cordoned_by": "alice", "foreign": True}
    annotations = cluster.node(gpu)["metadata"]["annotations"]
    assert annotations[CORDON_BY_ANNOTATION] == "alice"
    assert annotations[CORDON_REASON_ANNOTATION] == "bad DIMM"
    assert cluster.calls_of("POST", "/events") == []  # gpubot cordoned nothing


async def test_a_stale_version_for_a_node_still_schedulable_is_read_again_and_cordoned(
    cluster: Cluster, kube: KubernetesKubeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The node changed in a way that is not a cordon (a label): 409, one GET, then the
    cordon with the fresh version succeeds."""
    gpu = cluster.add_node("gpu-c", gpus=8)
    before = await kube.get_node(node=gpu)
    cluster.core.patch_node(gpu, {"metadata": {"labels": {"team": "ml"}}})
    _cache_answers(kube, monkeypatch, before)
    cluster.calls.clear()
    out = await run_cordon(_ctx(kube), NodeParams(node=gpu))
    assert await kube.flush_events(timeout_s=30) == 0  # the Event goes off the step's path
    assert [c.status for c in cluster.calls if c.method == "PATCH"] == [409, 200]
    assert len(cluster.calls_of("GET", f"/nodes/{gpu}")) == 1
    assert out["was_cordoned"] is False
    assert cluster.node(gpu)["spec"]["unschedulable"] is True


async def test_a_cached_cordon_is_confirmed_by_the_server_before_it_is_believed(
    cluster: Cluster, kube: KubernetesKubeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache still shows a cordon someone has just lifted: the server is asked, and the
    node is cordoned rather than reported as already cordoned."""
    gpu = cluster.add_node("gpu-d", gpus=8)
    fresh = await kube.get_node(node=gpu)
    _cache_answers(kube, monkeypatch, replace(fresh, unschedulable=True))
    out = await run_cordon(_ctx(kube), NodeParams(node=gpu))
    assert await kube.flush_events(timeout_s=30) == 0  # the Event goes off the step's path
    assert out["was_cordoned"] is False
    assert cluster.node(gpu)["spec"]["unschedulable"] is True


async def test_an_old_version_is_refused_by_the_server_as_a_conflict(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    """The precondition is the API server's own: a cordon sent with a version the node has
    moved past raises ConflictError and changes nothing."""
    gpu = cluster.add_node("gpu-e", gpus=8)
    old = (await kube.get_node(node=gpu)).resource_version
    assert old
    cluster.core.patch_node(gpu, {"metadata": {"labels": {"moved": "yes"}}})
    with pytest.raises(ConflictError):
        await kube.set_unschedulable(
            node=gpu, value=True, actor="system", reason="gpubot test", expect_version=old
        )
    assert not cluster.node(gpu)["spec"].get("unschedulable")


async def test_plans_of_many_cordons_send_one_dry_run(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    """Plans of cordons on three nodes: the first sends its dryRun=All PATCH (RBAC and
    admission answer it); the others within 30 s rely on it and send none."""
    nodes = [cluster.add_node(f"gpu-p{i}", gpus=8) for i in range(3)]
    cluster.calls.clear()
    for node in nodes:
        note = await plan_cordon(_ctx(kube, dry_run=True), NodeParams(node=node))
        assert note.summary.startswith(f"cordon {node}")
    dry = [c for c in cluster.calls if c.method == "PATCH"]
    assert len(dry) == 1
    assert "dryRun=All" in dry[0].path
    assert all(not cluster.node(n)["spec"].get("unschedulable") for n in nodes)
