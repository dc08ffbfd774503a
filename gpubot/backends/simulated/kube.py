"""SimulatedKube: the simulated cluster's API, its roles composed as KubernetesKubeApi
composes them over the real API server."""

from __future__ import annotations

from gpubot.backends.simulated.evictions import SimulatedEvictions
from gpubot.backends.simulated.nodes import SimulatedNodes
from gpubot.backends.simulated.pods import SimulatedPodReads
from gpubot.backends.simulated.workloads import SimulatedWorkloads


class SimulatedKube(SimulatedNodes, SimulatedPodReads, SimulatedEvictions, SimulatedWorkloads):
    """The KubeApi port over the shared state: node operations and agent addresses, pod
    reads, evictions and workloads, each its own adapter (nodes.py, pods.py, evictions.py,
    workloads.py)."""
