"""The GPU pod cache on the real API server: one LIST (in pages), then the watch keeps each
node's GPU pods current, so a plan's figures cost no request; under the shipped RBAC it lists
and watches without a 403."""

from __future__ import annotations

from kube_cluster import Cluster, shipped_rules
from waiting import wait_until

from gpubot.backends.kube import KubernetesKubeApi


def _names(kube: KubernetesKubeApi, node: str) -> set[str]:
    kept = kube.pod_cache.gpu_pods(node)
    assert kept is not None, "the pod cache is not live"
    return {f"{p.namespace}/{p.name}" for p in kept}


async def test_plans_read_gpu_pods_from_the_watch_without_a_request(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    """GPU pods (not the CPU pod) on each node, as they come and go: every change arrives
    through the watch, the cache listed once, and gpu_pods sends no request."""
    ns = cluster.namespace("train")
    a, b = cluster.add_node("pc-a"), cluster.add_node("pc-b")
    cluster.add_pod(ns, "llm-0", node=a, gpus=4)
    cluster.add_pod(ns, "sidecar", node=a)
    kube.pod_cache.page_size = 1  # the server's continue tokens, a page per pod
    assert await kube.warm(timeout_s=15) is True
    assert len(cluster.calls_of("GET", "/api/v1/pods?continue=")) >= 1
    assert _names(kube, a) == {f"{ns}/llm-0"}

    cluster.add_pod(ns, "llm-1", node=b, gpus=8)
    wait_until(lambda: _names(kube, b) == {f"{ns}/llm-1"}, "a new GPU pod through the watch")
    cluster.core.delete_namespaced_pod("llm-0", ns, grace_period_seconds=0)
    wait_until(lambda: _names(kube, a) == set(), "a deleted GPU pod")

    calls = len(cluster.calls)
    pods = await kube.gpu_pods(node=b)
    assert [(p.name, p.gpu_request, p.node) for p in pods] == [("llm-1", 8, b)]
    assert len(cluster.calls) == calls, "gpu_pods sent a request while the cache is live"
    assert kube.pod_cache.lists == 1


async def test_without_the_cache_gpu_pods_asks_the_server(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    """A one-shot command never warms: the same answer comes from a LIST of the node's pods."""
    ns = cluster.namespace("train")
    node = cluster.add_node("pc-cold")
    cluster.add_pod(ns, "llm-0", node=node, gpus=2)
    cluster.add_pod(ns, "web", node=node)
    pods = await kube.gpu_pods(node=node)
    assert [(p.name, p.gpu_request) for p in pods] == [("llm-0", 2)]
    assert cluster.calls_of("GET", f"/api/v1/pods?fieldSelector=spec.nodeName%3D{node}")
    assert kube.pod_cache.lists == 0


async def test_the_shipped_clusterrole_lets_the_pod_cache_list_and_watch(
    rbac_cluster: Cluster,
) -> None:
    c = rbac_cluster
    bot_ns = c.namespace("gpubot")
    ns = c.namespace("train")
    node = c.add_node("pc-rbac")
    cluster_rules, lease_rules = shipped_rules()
    token = c.service_account(bot_ns, "gpubot", cluster_rules=cluster_rules, rules=lease_rules)
    kube = KubernetesKubeApi(c.client(token))
    try:
        assert await kube.warm(timeout_s=15) is True
        c.add_pod(ns, "llm-0", node=node, gpus=1)
        wait_until(lambda: _names(kube, node) == {f"{ns}/llm-0"}, "the pod through the watch")
    finally:
        kube.close()
    denied = [f"{call.method} {call.path}" for call in c.calls if call.status in (401, 403)]
    assert denied == [], "the shipped ClusterRole does not allow: " + "; ".join(denied)
