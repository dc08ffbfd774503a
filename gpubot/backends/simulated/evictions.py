"""Evictions and deletions in the simulated cluster (the Evictions port): budgets are
honoured as the Eviction API does, a node without a kubelet leaves pods terminating, and each
pod's controller replaces what goes."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime

from gpubot.backends.simulated.base import OnState
from gpubot.backends.simulated.state import ClusterState, SimPod, name_suffix
from gpubot.errors import DisruptionBlockedError, NotFoundError


class SimulatedEvictions(OnState):
    async def evict(self, *, namespace: str, name: str, grace_seconds: int | None = None) -> None:
        """Evict as the Eviction API does: refused while a budget allows no disruption.

        The pod is gone at once whatever `grace_seconds` says: nothing here runs to shut down,
        unless its node's kubelet is gone: then it stays, terminating, as on a real cluster.
        A pod already terminating is not checked against budgets again.
        """
        with self._mutation() as state:
            pod = state.pod(namespace, name)
            if pod.deletion_timestamp:
                return
            for pdb in state.pdbs_for(pod):
                if state.pdb_info(pdb).disruptions_allowed < 1:
                    raise DisruptionBlockedError(
                        f"evicting {pod.ref} would violate PodDisruptionBudget "
                        f"{pdb.namespace}/{pdb.name}",
                        budget=pdb.name,
                    )
            if pod.node and not state.node(pod.node).kubelet:
                _start_terminating(state, pod, grace_seconds)
                return
            _remove(state, pod)

    async def delete_pod(self, *, namespace: str, name: str, grace_seconds: int | None) -> None:
        """Delete as the API does: no budget is consulted; a controller recreates the pod.
        On a node without a kubelet only grace period 0 removes it; otherwise it terminates."""
        with self._mutation() as state:
            try:
                pod = state.pod(namespace, name)
            except NotFoundError:
                return  # already gone: what the caller wanted
            if pod.node and not state.node(pod.node).kubelet and grace_seconds != 0:
                _start_terminating(state, pod, grace_seconds)
                return
            _remove(state, pod)


def _start_terminating(state: ClusterState, pod: SimPod, grace_seconds: int | None) -> None:
    """Deletion began but no kubelet confirms it: the pod stays listed with a
    deletionTimestamp. A ReplicaSet or Job replaces it at once (a terminating pod is not
    active); a StatefulSet waits until the name is free."""
    if pod.deletion_timestamp:
        return
    pod.deletion_timestamp = datetime.now(UTC).isoformat()
    # The API's default terminationGracePeriodSeconds when the request names none.
    pod.deletion_grace_seconds = 30 if grace_seconds is None else grace_seconds
    if pod.owner_kind and pod.owner_kind not in ("StatefulSet", "DaemonSet"):
        _recreate(state, pod)


def _remove(state: ClusterState, pod: SimPod) -> None:
    """The pod is gone: its GPUs go quiet, and its controller (if any) makes a new one."""
    state.pods.remove(pod)
    for index in pod.gpu_indices:
        state.settle(pod.node, index)
    replaced = pod.deletion_timestamp and pod.owner_kind not in ("StatefulSet", "DaemonSet")
    if pod.owner_kind and not replaced:
        _recreate(state, pod)


def _recreate(state: ClusterState, gone: SimPod) -> None:
    """What the pod's controller does after an eviction: start a replacement."""
    rng = random.Random(f"{state.seed}/{gone.ref}/{len(state.pods)}")  # noqa: S311 (names, not secrets)
    name = gone.name  # a StatefulSet pod comes back under its own name
    if gone.owner_kind != "StatefulSet":
        name = f"{gone.name.rsplit('-', 1)[0]}-{name_suffix(rng)}"
    pod = replace(
        gone,
        name=name,
        node="",
        phase="Pending",
        created_at=datetime.now(UTC),
        labels=dict(gone.labels),
        annotations=dict(gone.annotations),
        restart_count=0,
        last_state=None,
    )
    if gone.owner_kind == "DaemonSet":
        pod.node, pod.phase = gone.node, "Running"
    else:
        placement = state.schedulable_node(gpus=len(gone.gpu_indices))
        pod.gpu_indices = []
        if placement is not None:
            pod.node, pod.gpu_indices = placement
            pod.phase = "Running"
    state.pods.append(pod)
    for index in pod.gpu_indices:
        state.settle(pod.node, index)
