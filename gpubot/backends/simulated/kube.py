"""SimulatedKube: the simulated cluster's API, its roles composed as KubernetesKubeApi
composes them over the real API server."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpubot.backends.simulated.evictions import SimulatedEvictions
from gpubot.backends.simulated.nodes import SimulatedNodes
from gpubot.backends.simulated.pods import SimulatedPodReads
from gpubot.backends.simulated.workloads import SimulatedWorkloads

if TYPE_CHECKING:
    from gpubot.backends.simulated.cluster import SimulatedCluster


class SimulatedKube(SimulatedNodes, SimulatedPodReads, SimulatedEvictions):
    """The KubeApi port over the shared state: node operations and agent addresses, pod
    reads and evictions (nodes.py, pods.py, evictions.py), and its workloads adapter
    (workloads.py), as the official client's adapter holds its own."""

    def __init__(self, cluster: SimulatedCluster) -> None:
        super().__init__(cluster)
        self.workloads = SimulatedWorkloads(cluster)
