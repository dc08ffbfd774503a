"""Agents are found at addresses the cluster reports, never at a name an alert supplies."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from gpubot.backends.agent_address import AgentAddresses, AgentLocation, url_host
from gpubot.backends.agent_client import HttpNodeAgent
from gpubot.config import load_settings
from gpubot.domain.control.agent_tokens import node_token
from gpubot.domain.fleet.cluster import NodeInfo
from gpubot.errors import ConfigError, InputError, NotFoundError, PermanentStepError

MASTER = "master-secret-for-tests"


class FakeNodes:
    """The three KubeApi reads AgentAddresses makes, counted."""

    def __init__(self, ips: dict[str, str], pods: dict[str, str] | None = None) -> None:
        self.ips = ips
        self.pods = pods or {}
        self.listings = 0
        self.pod_queries: list[tuple[str, str]] = []

    async def node_internal_ips(self) -> dict[str, str]:
        self.listings += 1
        return dict(self.ips)

    async def list_nodes(self) -> list[NodeInfo]:
        self.listings += 1
        return [NodeInfo(name=name) for name in self.ips]

    async def pod_ips_by_node(self, *, namespace: str, selector: str) -> dict[str, str]:
        self.pod_queries.append((namespace, selector))
        return dict(self.pods)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Recorder:
    """A transport that answers like an agent for the node named by the token, and records."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        given = request.headers["authorization"].removeprefix("Bearer ")
        node = next(
            (n for n in ("gpu-a", "gpu-b") if given in _tokens(n)),
            "?",
        )
        return httpx.Response(200, json={"node": node, "gpus": [], "gpu_state": {"index": 2}})


def _tokens(node: str) -> tuple[str, str]:
    return (
        node_token(master=MASTER, node=node, scope="read"),
        node_token(master=MASTER, node=node, scope="mutate"),
    )


@pytest.fixture
def kube() -> FakeNodes:
    return FakeNodes({"gpu-a": "10.0.0.1", "gpu-b": "10.0.0.2"})


@pytest.fixture
async def agent(kube: FakeNodes) -> AsyncIterator[tuple[HttpNodeAgent, Recorder]]:
    recorder = Recorder()
    client = HttpNodeAgent(
        addresses=AgentAddresses(kube, AgentLocation(cluster="lab")),  # type: ignore[arg-type]
        master=MASTER,
        transport=httpx.MockTransport(recorder),
    )
    yield client, recorder
    await client.aclose()


async def test_a_node_that_exists_is_called_at_its_internal_ip_with_its_own_token(
    agent: tuple[HttpNodeAgent, Recorder],
) -> None:
    client, recorder = agent
    assert await client.gpus(node="gpu-b") == []
    [request] = recorder.requests
    assert str(request.url) == "http://10.0.0.2:9400/v1/gpus"
    assert request.headers["authorization"] == f"Bearer {_tokens('gpu-b')[0]}"  # read token


@pytest.mark.parametrize(
    ("node", "error"),
    [
        ("127.0.0.1", NotFoundError),  # a valid name, but no such Node in the cluster
        ("evil.example", NotFoundError),
        ("gpu-c", NotFoundError),
        ("evil.example:80/x", InputError),  # not even a node name
        ("gpu-a\n", InputError),
        ("gpu-a/../admin", InputError),
        ("", InputError),
    ],
)
async def test_a_node_the_cluster_does_not_report_is_never_contacted(
    agent: tuple[HttpNodeAgent, Recorder], node: str, error: type[Exception]
) -> None:
    client, recorder = agent
    with pytest.raises(error) as caught:
        await client.gpus(node=node)
    assert recorder.requests == []
    assert "\n" not in str(caught.value)
    for action in (
        client.reset_gpu(node=node, gpu=0),
        client.set_power_limit(node=node, gpu=0, watts=300),
    ):
        with pytest.raises(error):
            await action
    assert recorder.requests == []


async def test_the_agent_must_answer_for_the_node_asked(kube: FakeNodes) -> None:
    """An address that now belongs to another node's agent is not trusted."""

    def other(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"node": "gpu-b", "gpus": []})

    client = HttpNodeAgent(
        addresses=AgentAddresses(kube, AgentLocation(cluster="lab")),  # type: ignore[arg-type]
        master=MASTER,
        transport=httpx.MockTransport(other),
    )
    with pytest.raises(PermanentStepError, match="answers for node 'gpu-b', not gpu-a"):
        await client.gpus(node="gpu-a")
    await client.aclose()


async def test_mutations_carry_the_mutate_token_and_the_uuid(
    agent: tuple[HttpNodeAgent, Recorder],
) -> None:
    client, recorder = agent
    assert (await client.reset_gpu(node="gpu-a", gpu=2, uuid="GPU-1234")).index == 2
    [request] = recorder.requests
    assert str(request.url) == "http://10.0.0.1:9400/v1/gpus/2/reset"
    assert request.headers["authorization"] == f"Bearer {_tokens('gpu-a')[1]}"
    assert request.content == b'{"uuid":"GPU-1234"}'


async def test_addresses_are_listed_once_per_cache_window() -> None:
    kube = FakeNodes({"gpu-a": "10.0.0.1"})
    clock = Clock()
    book = AgentAddresses(kube, AgentLocation(cluster="lab"), monotonic=clock)  # type: ignore[arg-type]
    for _ in range(50):
        assert await book.base_url("gpu-a") == "http://10.0.0.1:9400"
    assert kube.listings == 1
    with pytest.raises(NotFoundError):
        await book.base_url("gpu-new")  # a miss does not list again (an alert cannot force it)
    assert kube.listings == 1
    kube.ips["gpu-new"] = "10.0.0.9"
    clock.t += 29.9
    with pytest.raises(NotFoundError):
        await book.base_url("gpu-new")
    clock.t += 0.1
    assert await book.base_url("gpu-new") == "http://10.0.0.9:9400"
    assert kube.listings == 2
    book.forget()
    await book.base_url("gpu-a")
    assert kube.listings == 3


async def test_agent_pod_addresses_come_from_pods_on_existing_nodes() -> None:
    kube = FakeNodes(
        {"gpu-a": "10.0.0.1", "gpu-b": "10.0.0.2"},
        pods={"gpu-a": "10.244.1.7", "gone-node": "10.244.9.9", "gpu-b": "not-an-ip"},
    )
    where = AgentLocation(
        cluster="lab",
        address="agent_pod",
        port=9500,
        scheme="https",
        namespace="gpu-system",
        selector="app=gpubot-agent",
    )
    book = AgentAddresses(kube, where)  # type: ignore[arg-type]
    assert await book.base_url("gpu-a") == "https://10.244.1.7:9500"
    assert kube.pod_queries == [("gpu-system", "app=gpubot-agent")]
    with pytest.raises(NotFoundError, match="running agent pod"):
        await book.base_url("gone-node")  # a pod whose node is not in the cluster
    with pytest.raises(NotFoundError):
        await book.base_url("gpu-b")  # the cluster's answer is not an IP address: dropped


def test_only_ip_addresses_become_hosts() -> None:
    assert url_host("10.1.2.3") == "10.1.2.3"
    assert url_host("fd00::1") == "[fd00::1]"
    for text in ("evil.example", "10.0.0.1:80", "10.0.0.1/x", "", "10.0.0.1@evil"):
        assert url_host(text) is None


def test_the_old_agent_url_key_says_what_to_set() -> None:
    with pytest.raises(ConfigError, match=r"agent_url is no longer read.*agent: \{port: 9400"):
        load_settings(clusters=[{"name": "lab", "agent_url": "http://{node}:9400"}])
    settings = load_settings(
        clusters=[{"name": "lab", "agent": {"address": "agent_pod", "namespace": "gpu"}}]
    )
    agent = settings.clusters[0].agent
    assert agent is not None
    assert (agent.address, agent.port, agent.namespace, agent.cache_seconds) == (
        "agent_pod",
        9400,
        "gpu",
        30.0,
    )
