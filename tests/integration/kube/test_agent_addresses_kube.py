"""Agent addresses through the real client: Node InternalIPs and agent pod IPs per node."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kube_standin import KubeStandin, client_for

from gpubot.backends.agent_address import AgentAddresses, AgentLocation
from gpubot.backends.kube import KubernetesKubeApi
from gpubot.errors import NotFoundError

SELECTOR = "app.kubernetes.io/component=agent"


@pytest.fixture
def api(standin: KubeStandin) -> Iterator[KubernetesKubeApi]:
    """The adapter on the stand-in (which keeps node status as given, addresses included)."""
    kube = KubernetesKubeApi(client_for(standin))
    yield kube
    kube.close()


def _fleet(s: KubeStandin) -> None:
    def addresses(ip: str) -> dict[str, object]:
        return {
            "status": {
                "addresses": [
                    {"type": "Hostname", "address": "evil.example"},
                    {"type": "ExternalIP", "address": "203.0.113.9"},
                    {"type": "InternalIP", "address": ip},
                ]
            }
        }

    s.add_node("gpu-a", **addresses("10.0.0.1"))
    s.add_node("gpu-b", **addresses("fd00::2"))
    s.add_node("gpu-none")  # reports no address
    labels = {"app.kubernetes.io/component": "agent"}
    s.add_pod("gpubot", "agent-a", node="gpu-a", labels=labels, status={"podIP": "10.244.0.7"})
    s.add_pod(
        "gpubot", "agent-b", node="gpu-b", labels=labels, phase="Pending", status={"podIP": ""}
    )
    s.add_pod("ml", "impostor", node="gpu-b", labels=labels, status={"podIP": "10.244.9.9"})
    s.add_pod("gpubot", "bot", node="gpu-b", status={"podIP": "10.244.1.1"})


async def test_internal_ips_come_from_node_status(
    standin: KubeStandin, api: KubernetesKubeApi
) -> None:
    _fleet(standin)
    assert await api.node_internal_ips() == {"gpu-a": "10.0.0.1", "gpu-b": "fd00::2"}
    book = AgentAddresses(api, AgentLocation(cluster="lab", port=9401))
    assert await book.base_url("gpu-a") == "http://10.0.0.1:9401"
    assert await book.base_url("gpu-b") == "http://[fd00::2]:9401"
    for node in ("gpu-none", "10.0.0.1", "evil.example"):
        with pytest.raises(NotFoundError):
            await book.base_url(node)
    # One listing above, one for all the lookups through the cache.
    assert len(standin.calls_of("GET", "/api/v1/nodes")) == 2


async def test_agent_pods_are_running_selected_pods_in_their_namespace(
    standin: KubeStandin, api: KubernetesKubeApi
) -> None:
    _fleet(standin)
    found = await api.pod_ips_by_node(namespace="gpubot", selector=SELECTOR)
    assert found == {"gpu-a": "10.244.0.7"}  # not the Pending pod, the other namespace, the bot
    where = AgentLocation(cluster="lab", address="agent_pod", namespace="gpubot", selector=SELECTOR)
    book = AgentAddresses(api, where)
    assert await book.base_url("gpu-a") == "http://10.244.0.7:9400"
    with pytest.raises(NotFoundError, match="running agent pod"):
        await book.base_url("gpu-b")
