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


def api_client_for(
    *,
    cluster: str,
    context: str | None = None,
    kubeconfig: Path | None = None,
    in_cluster: bool = False,
) -> client.ApiClient:
    """ConfigError naming the cluster when its credentials cannot be loaded."""
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
    configuration.connection_pool_maxsize = CONNECTIONS
    return client.ApiClient(configuration)
