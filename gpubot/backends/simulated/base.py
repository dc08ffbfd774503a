"""OnState: what each adapter of the simulated cluster holds, the one state they all share."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from gpubot.backends.simulated.state import ClusterState

if TYPE_CHECKING:
    from gpubot.backends.simulated.cluster import SimulatedCluster


class OnState:
    """An adapter over the cluster's shared state: reads under its lock, changes as one
    transaction (`SimulatedCluster.reading` and `SimulatedCluster.mutation`)."""

    def __init__(self, cluster: SimulatedCluster) -> None:
        self._cluster = cluster

    @property
    def cluster(self) -> SimulatedCluster:
        """The shared state this adapter serves (for the demo and tests to inject faults)."""
        return self._cluster

    def _reading(self) -> AbstractContextManager[ClusterState]:
        return self._cluster.reading()

    def _mutation(self) -> AbstractContextManager[ClusterState]:
        return self._cluster.mutation()
