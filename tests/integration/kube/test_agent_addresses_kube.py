"""Agent addresses through the real client on a real API server: Node InternalIPs and agent
pod IPs per node."""

from __future__ import annotations

import pytest
from kube_cluster import Cluster

from gpubot.backends.agent_address import AgentAddresses, AgentLocation
from gpubot.backends.kube import KubernetesKubeApi
from gpubot.errors import NotFoundError

SELECTOR = "app.kubernetes.io/component=agent"


def _fleet(c: Cluster) -> tuple[str, str, str, str]:
    def addresses(ip: str) -> list[dict[str, str]]:
        return [
            {"type": "Hostname", "address": "evil.example"},
            {"type": "ExternalIP", "address": "203.0.113.9"},
            {"type": "InternalIP", "address": ip},
        ]

    a = c.add_node("gpu-a", addresses=addresses("10.0.0.1"))
    b = c.add_node("gpu-b", addresses=addresses("fd00::2"))
    c.add_node("gpu-none")  # reports no address
    bot, ml = c.namespace("gpubot"), c.namespace("ml")
    labels = {"app.kubernetes.io/component": "agent"}
    c.add_pod(bot, "agent-a", node=a, labels=labels, status={"podIP": "10.244.0.7"})
    c.add_pod(bot, "agent-b", node=b, labels=labels, phase="Pending")
    c.add_pod(ml, "impostor", node=b, labels=labels, status={"podIP": "10.244.9.9"})
    c.add_pod(bot, "bot", node=b, status={"podIP": "10.244.1.1"})
    return a, b, c.name("gpu-none"), bot


async def test_internal_ips_come_from_node_status(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    a, b, none, _ = _fleet(cluster)
    ips = await kube.node_internal_ips()
    assert {n: ip for n, ip in ips.items() if n.startswith(cluster.prefix)} == {
        a: "10.0.0.1",
        b: "fd00::2",
    }
    book = AgentAddresses(kube, AgentLocation(cluster="lab", port=9401))
    assert await book.base_url(a) == "http://10.0.0.1:9401"
    assert await book.base_url(b) == "http://[fd00::2]:9401"
    for node in (none, "10.0.0.1", "evil.example"):
        with pytest.raises(NotFoundError):
            await book.base_url(node)
    # One listing above, one for all the lookups through the cache.
    assert len([c for c in cluster.calls if c.path.startswith("/api/v1/nodes")]) == 2


async def test_agent_pods_are_running_selected_pods_in_their_namespace(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    a, b, _, bot = _fleet(cluster)
    found = await kube.pod_ips_by_node(namespace=bot, selector=SELECTOR)
    assert found == {a: "10.244.0.7"}  # not the Pending pod, the other namespace, the bot
    where = AgentLocation(cluster="lab", address="agent_pod", namespace=bot, selector=SELECTOR)
    book = AgentAddresses(kube, where)
    assert await book.base_url(a) == "http://10.244.0.7:9400"
    with pytest.raises(NotFoundError, match="running agent pod"):
        await book.base_url(b)
