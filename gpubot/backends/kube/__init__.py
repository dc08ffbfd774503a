"""The Kubernetes backend on the official client: KubeApi, Lease leadership, connection."""

from gpubot.backends.kube.api import KubernetesKubeApi
from gpubot.backends.kube.connect import api_client_for
from gpubot.backends.kube.lease import LeaseLeadership

__all__ = ["KubernetesKubeApi", "LeaseLeadership", "api_client_for"]
