"""The API client gpubot makes for a cluster keeps as many connections to the API server as
requests it sends at once, so a storm does not open a TLS connection per request, and does
not read the proxy from the environment again for each request."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubernetes.client import configuration as client_configuration

from gpubot.backends.kube import KubernetesKubeApi
from gpubot.backends.kube.connect import CONNECTIONS, api_client_for, configuration_for
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


def test_requests_do_not_read_the_proxy_from_the_environment_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kubeconfig loader's token hook sets the server's address before every request;
    the client would then look the proxy up in the whole environment each time."""
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "10.0.0.0/8")
    looked_up = []
    real = client_configuration.getproxies
    monkeypatch.setattr(client_configuration, "getproxies", lambda: looked_up.append(1) or real())
    configuration = configuration_for(cluster="gpu-a", kubeconfig=kubeconfig(tmp_path))
    # The environment as it was at start-up still decides the proxy.
    assert configuration.proxy == "http://proxy.example:3128"
    assert configuration.no_proxy == "10.0.0.0/8"
    monkeypatch.setenv("HTTPS_PROXY", "http://elsewhere.example:3128")
    looked_up.clear()
    for _ in range(3):  # what the client does for every request's Authorization header
        assert configuration.get_api_key_with_prefix("BearerToken") == "Bearer t"
    assert looked_up == []
    assert configuration.host == "https://127.0.0.1:6443"
    assert configuration.proxy == "http://proxy.example:3128"


def test_a_proxy_named_by_the_kubeconfig_is_kept(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path)
    config = yaml.safe_load(path.read_text())
    config["clusters"][0]["cluster"]["proxy-url"] = "http://kube-proxy.example:8080"
    path.write_text(yaml.safe_dump(config))
    configuration = configuration_for(cluster="gpu-a", kubeconfig=path)
    configuration.get_api_key_with_prefix("BearerToken")
    assert configuration.proxy == "http://kube-proxy.example:8080"
