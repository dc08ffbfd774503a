"""The hot requests' transport (node PATCH and GET, pod LIST, Event POST) on the real API
server: names from alerts stay one path segment, the token is read at every request, the
generated client's path serves the settings aiohttp does not, and one adapter serves callers
on any event loop."""

from __future__ import annotations

import asyncio
import gc

import pytest
from kube_cluster import Cluster
from kubernetes import client

from gpubot.backends.kube import KubernetesKubeApi
from gpubot.backends.kube.transport import AioTransport, ClientTransport
from gpubot.errors import NotFoundError, PermanentStepError, TemporaryStepError


@pytest.mark.parametrize(
    ("name", "sent"),
    [
        ("a/b", "/api/v1/nodes/a%2Fb"),
        ("../../namespaces/kube-system/secrets", "/api/v1/nodes/..%2F..%2Fnamespaces%2F"),
        ("x?labelSelector=y", "/api/v1/nodes/x%3FlabelSelector%3Dy"),
        ("gpu 1#frag", "/api/v1/nodes/gpu%201%23frag"),
        ("%2e%2e", "/api/v1/nodes/%252e%252e"),
    ],
)
async def test_a_hostile_node_name_is_one_path_segment_and_reaches_no_other_object(
    cluster: Cluster, kube: KubernetesKubeApi, name: str, sent: str
) -> None:
    """An alert's `node` label goes into the request path percent-encoded whole: the server
    looks for a Node of that name (404, or 400 for a name no Node may have), never another
    resource or a query."""
    with pytest.raises((NotFoundError, PermanentStepError)):
        await kube.get_node(node=name)
    with pytest.raises((NotFoundError, PermanentStepError)):
        await kube.set_unschedulable(node=name, value=True, actor="x", reason="y")
    paths = [c.path for c in cluster.calls]
    assert len(paths) == 2
    assert all(p.startswith(sent) for p in paths), paths


@pytest.mark.parametrize("name", ["", ".", ".."])
async def test_a_name_that_cannot_be_a_path_segment_is_refused_before_any_request(
    cluster: Cluster, kube: KubernetesKubeApi, name: str
) -> None:
    with pytest.raises(PermanentStepError, match="not an object name"):
        await kube.set_unschedulable(node=name, value=True, actor="x", reason="y")
    assert cluster.calls == []


async def test_the_bearer_token_is_read_at_every_request(cluster: Cluster) -> None:
    """The loaders' refresh hook runs before every request and the token it writes into the
    configuration is the one that request carries: a rotated token is used at once."""
    gpu = cluster.add_node("gpu-a")
    api = cluster.client()
    good = api.configuration.api_key["BearerToken"]
    current = ["Bearer not-a-token"]

    def refresh(configuration: client.Configuration) -> None:
        configuration.api_key["BearerToken"] = current[0]

    api.configuration.refresh_api_key_hook = refresh
    kube = KubernetesKubeApi(api)
    try:
        assert isinstance(kube.http, AioTransport)
        with pytest.raises(PermanentStepError, match="may not get nodes"):
            await kube.get_node(node=gpu)
        current[0] = good
        assert (await kube.get_node(node=gpu)).name == gpu
    finally:
        kube.close()
    assert [c.status for c in cluster.calls] == [401, 200]


async def test_the_generated_clients_path_serves_the_same_requests(cluster: Cluster) -> None:
    """Settings aiohttp is not given (a proxy, socket options) keep the client's own path:
    the same cordon, read, pod list and Event, seen by its call_api."""
    gpu, ns = cluster.add_node("gpu-a"), cluster.namespace("ml")
    pod = cluster.add_pod(ns, "train-0", node=gpu, gpus=1)
    api = cluster.client()
    api.configuration.socket_options = []
    kube = KubernetesKubeApi(api)
    try:
        assert isinstance(kube.http, ClientTransport)
        await kube.set_unschedulable(node=gpu, value=True, actor="alice", reason="xid 79")
        node = await kube.get_node(node=gpu)
        pods = await kube.list_pods(node=gpu)
        await kube.post_node_event(node=gpu, reason="Cordoned", message="by gpubot")
        assert await kube.flush_events(timeout_s=10) == 0
        with pytest.raises(NotFoundError):
            await kube.get_node(node=cluster.name("nope"))
    finally:
        kube.close()
    assert node.unschedulable
    assert [p.name for p in pods] == [pod]
    methods = [(c.method, c.status) for c in cluster.calls]
    assert methods[:3] == [("PATCH", 200), ("GET", 200), ("GET", 200)]
    assert ("POST", 201) in methods
    assert ("GET", 404) in methods


def test_a_proxy_keeps_the_generated_clients_path() -> None:
    configuration = client.Configuration(host="https://127.0.0.1:6443")
    configuration.proxy = "http://127.0.0.1:3128"
    kube = KubernetesKubeApi(client.ApiClient(configuration))
    try:
        assert isinstance(kube.http, ClientTransport)
    finally:
        kube.close()


def test_one_adapter_serves_callers_on_two_event_loops_and_close_stops_its_thread(
    cluster: Cluster,
) -> None:
    gpu = cluster.add_node("gpu-a")
    kube = KubernetesKubeApi(cluster.client())
    assert isinstance(kube.http, AioTransport)
    try:
        first = asyncio.run(kube.get_node(node=gpu))
        asyncio.run(kube.set_unschedulable(node=gpu, value=True, actor="x", reason="y"))
        second = asyncio.run(kube.get_node(node=gpu))
        thread = kube.http.thread
    finally:
        kube.close()
    assert (first.unschedulable, second.unschedulable) == (False, True)
    assert thread is not None
    assert not thread.is_alive()
    assert kube.http.thread is None


def test_an_adapter_dropped_without_close_stops_its_thread_and_closes_its_session(
    cluster: Cluster,
) -> None:
    """Collected without close() (a process that never shuts its adapters down): the loop
    stops and its thread closes the session, so no unclosed-session warning is raised."""
    gpu = cluster.add_node("gpu-a")
    kube = KubernetesKubeApi(cluster.client())
    assert isinstance(kube.http, AioTransport)
    asyncio.run(kube.get_node(node=gpu))
    thread = kube.http.thread
    assert thread is not None
    kube.nodes.stop()
    del kube
    gc.collect()
    thread.join(timeout=10)
    assert not thread.is_alive()


async def test_a_server_that_is_not_there_is_a_temporary_error() -> None:
    configuration = client.Configuration(host="https://127.0.0.1:9")
    kube = KubernetesKubeApi(client.ApiClient(configuration), request_timeout=2)
    try:
        with pytest.raises(TemporaryStepError, match=r"cannot reach the API server \(get nodes/"):
            await kube.get_node(node="gpu-a")
    finally:
        kube.close()
