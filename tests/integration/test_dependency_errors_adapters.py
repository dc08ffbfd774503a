"""The real adapters' failures reach gpubot_dependency_errors_total: the official Kubernetes
client and the Prometheus client, each aimed at a loopback port nothing listens on, raise
their retryable error and count one error under their dependency."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from kubernetes import client

from gpubot.backends.kube import KubernetesKubeApi
from gpubot.backends.prometheus import PrometheusMetrics
from gpubot.engine.counted_ports import counted
from gpubot.errors import MetricsUnavailableError, TemporaryStepError
from gpubot.web.metrics import WebMetrics


@pytest.fixture
def closed_port() -> int:
    """A loopback port that was free a moment ago: a connection to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.fixture
def kube(closed_port: int) -> Iterator[KubernetesKubeApi]:
    config = client.Configuration(host=f"http://127.0.0.1:{closed_port}")
    api = KubernetesKubeApi(client.ApiClient(config), request_timeout=5)
    yield api
    api.close()


async def test_an_unreachable_api_server_counts_one_kubernetes_error(
    kube: KubernetesKubeApi,
) -> None:
    metrics = WebMetrics()
    nodes = counted(kube, "kubernetes", metrics)

    with pytest.raises(TemporaryStepError, match="cannot reach the API server"):
        await nodes.get_node(node="gpu-node-07")

    assert metrics.state.dependency_errors["kubernetes"] == 1
    assert metrics.state.dependency_errors["prometheus"] == 0


async def test_an_unreachable_prometheus_counts_one_prometheus_error(closed_port: int) -> None:
    metrics = WebMetrics()
    prometheus = counted(
        PrometheusMetrics(url=f"http://127.0.0.1:{closed_port}", retries=0, timeout_seconds=5),
        "prometheus",
        metrics,
    )

    with pytest.raises(MetricsUnavailableError):
        await prometheus.query(promql="up")

    assert metrics.state.dependency_errors["prometheus"] == 1
    assert metrics.state.dependency_errors["kubernetes"] == 0
