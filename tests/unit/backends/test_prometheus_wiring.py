"""Wiring: a kubernetes cluster with `prometheus_url` queries Prometheus through
PrometheusMetrics with its configured policy; without one, metric steps fail in one line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpubot.backends.prometheus import PrometheusMetrics
from gpubot.config import load_settings
from gpubot.errors import ConfigError, PermanentStepError
from gpubot.ports import ClusterPorts
from gpubot.wiring import build_clusters


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "lab",
                "clusters": [{"name": "lab", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "bot", "user": {"token": "t0ken"}}],
                "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "bot"}}],
            }
        )
    )
    return path


@pytest.fixture
def build(kubeconfig: Path) -> Iterator[Any]:
    built: list[ClusterPorts] = []

    def _build(**cluster: Any) -> ClusterPorts:
        settings = load_settings(
            None,
            clusters=[
                {
                    "name": "lab",
                    "backend": "kubernetes",
                    "kubeconfig": str(kubeconfig),
                    "agent": {"port": 9400},
                    **cluster,
                }
            ],
        )
        ports = build_clusters(settings)["lab"]
        built.append(ports)
        return ports

    yield _build
    for ports in built:
        ports.kube.close()  # type: ignore[attr-defined]


def test_prometheus_url_gives_prometheus_metrics_with_its_policy(
    build: Any, tmp_path: Path
) -> None:
    """The cluster's keys reach the adapter: URL, timeout, retries and the token file."""
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    metrics = build(
        prometheus_url="http://prometheus.monitoring:9090/",
        prometheus_timeout_seconds=4,
        prometheus_retries=1,
        prometheus_token_file=str(token),
    ).metrics
    assert isinstance(metrics, PrometheusMetrics)
    assert metrics.url == "http://prometheus.monitoring:9090"
    assert (metrics.timeout_seconds, metrics.retries, metrics.token_file) == (4.0, 1, token)


def test_defaults_are_a_deliberate_retry_policy(build: Any) -> None:
    """Unset keys give 10 s per query and 2 quick retries, not the client's ~6 s of retrying."""
    metrics = build(prometheus_url="http://prometheus:9090").metrics
    assert isinstance(metrics, PrometheusMetrics)
    assert (metrics.timeout_seconds, metrics.retries, metrics.token_file) == (10.0, 2, None)


async def test_without_prometheus_url_metric_steps_fail_in_one_line(build: Any) -> None:
    """The cluster still builds (kube and agent work); a query names the missing key."""
    metrics = build().metrics
    with pytest.raises(PermanentStepError, match=r"clusters\.lab: no prometheus_url is set"):
        await metrics.query(promql="up")


@pytest.mark.parametrize(
    ("cluster", "problem"),
    [
        ({"prometheus_url": "prometheus:9090"}, "is not an http(s) URL"),
        (
            {"prometheus_url": "http://p:9090", "prometheus_token_file": "/nonexistent/token"},
            "prometheus_token_file: /nonexistent/token is not a file",
        ),
        ({"prometheus_url": "http://p:9090", "prometheus_retries": -1}, "prometheus_retries"),
        (
            {"prometheus_url": "http://p:9090", "prometheus_timeout_seconds": 0},
            "prometheus_timeout_seconds",
        ),
    ],
)
def test_bad_prometheus_settings_are_one_config_error(
    build: Any, cluster: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        build(**cluster)
    assert problem in str(caught.value)
    assert "\n" not in str(caught.value)
