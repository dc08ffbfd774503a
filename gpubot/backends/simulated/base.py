"""OnState: what each adapter of the simulated cluster holds, the one state they all share."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpubot.backends.simulated.cluster import SimulatedCluster


class OnState:
    """An adapter over the cluster's shared state: it reads under the state's lock
    (`SimulatedCluster.reading`) and changes it as one transaction (`mutation`)."""

    def __init__(self, cluster: SimulatedCluster) -> None:
        self._cluster = cluster

    @property
    def cluster(self) -> SimulatedCluster:
        """The shared state this adapter serves (for the demo and tests to inject faults)."""
        return self._cluster
