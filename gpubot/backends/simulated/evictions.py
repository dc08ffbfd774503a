"""Evictions and deletions in the simulated cluster (the Evictions port): each one
transaction on the shared state, which honours budgets as the Eviction API does, leaves pods
terminating on a node without a kubelet, and has each pod's controller replace what goes
(ClusterState.evict and ClusterState.delete)."""

from __future__ import annotations

from gpubot.backends.simulated.base import OnState


class SimulatedEvictions(OnState):
    async def evict(self, *, namespace: str, name: str, grace_seconds: int | None = None) -> None:
        with self._cluster.mutation() as state:
            state.evict(namespace, name, grace_seconds)

    async def delete_pod(self, *, namespace: str, name: str, grace_seconds: int | None) -> None:
        with self._cluster.mutation() as state:
            state.delete(namespace, name, grace_seconds)
