"""An ApiClient for one cluster: a kubeconfig context, or the pod's service account."""

from __future__ import annotations

from pathlib import Path

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from gpubot.errors import ConfigError

# Requests to one API server in flight at once: KubernetesKubeApi's worker threads, and the
# connections urllib3 keeps to it. The client's own default keeps cpu_count * 5 (10 on two
# cores); with more requests in flight, each extra one opened a TLS connection and threw it
# away after one request.
CONNECTIONS = 32


def configuration_for(
    *,
    cluster: str,
    context: str | None = None,
    kubeconfig: Path | None = None,
    in_cluster: bool = False,
) -> client.Configuration:
    """The client's settings for one cluster; ConfigError naming the cluster when its
    credentials cannot be loaded.

    Both loaders leave a hook that sets the server's address again before every request
    (it refreshes an expiring token), and the client's address setter reads the proxy from
    the environment each time: a walk of every environment variable per request, and a
    pod's environment holds several variables for each Service in its namespace. The proxy
    (from the kubeconfig, or from the environment as it is at start-up) is fixed here once.
    """
    configuration = client.Configuration()
    try:
        if in_cluster:
            config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration
            )
        else:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=str(kubeconfig) if kubeconfig else None,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
    except (ConfigException, OSError, TypeError) as exc:
        how = "in-cluster service account" if in_cluster else f"kubeconfig context {context!r}"
        raise ConfigError(f"clusters.{cluster}: cannot load the {how}: {exc}") from exc
    configuration.proxy = configuration.proxy  # set explicitly: not looked up again
    configuration.connection_pool_maxsize = CONNECTIONS
    return configuration


def api_client_for(
    *,
    cluster: str,
    context: str | None = None,
    kubeconfig: Path | None = None,
    in_cluster: bool = False,
) -> client.ApiClient:
    """An ApiClient on configuration_for's settings."""
    return client.ApiClient(
        configuration_for(
            cluster=cluster, context=context, kubeconfig=kubeconfig, in_cluster=in_cluster
        )
    )
