"""The API client gpubot makes for a cluster keeps as many connections to the API server as
requests it sends at once, so a storm does not open a TLS connection per request."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpubot.backends.kube import KubernetesKubeApi
from gpubot.backends.kube.connect import CONNECTIONS, api_client_for
from gpubot.errors import ConfigError


def kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "ctx",
            }
        )
    )
    return path


def test_the_client_keeps_a_connection_for_each_request_in_flight(tmp_path: Path) -> None:
    api = api_client_for(cluster="gpu-a", kubeconfig=kubeconfig(tmp_path))
    try:
        # urllib3 keeps at most `maxsize` connections per host; the default is cpu_count * 5.
        assert api.rest_client.pool_manager.connection_pool_kw["maxsize"] == CONNECTIONS
        kube = KubernetesKubeApi(api)
        assert kube._pool._max_workers == CONNECTIONS  # the threads in flight
    finally:
        api.close()  # type: ignore[no-untyped-call]


def test_a_kubeconfig_that_cannot_be_loaded_is_one_line_naming_the_cluster(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError, match=r"clusters\.gpu-a: cannot load the kubeconfig context"):
        api_client_for(cluster="gpu-a", kubeconfig=tmp_path / "missing", context="ctx")
