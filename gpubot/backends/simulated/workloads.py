"""Workloads of the simulated cluster (the Workloads port): owner resolution, and scaling as
the controllers do."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from gpubot.backends.simulated.base import OnState
from gpubot.backends.simulated.state import ClusterState, SimPod, SimWorkload, name_suffix
from gpubot.domain.fleet.workloads import SCALABLE_KINDS, Workload, owner_from_pod
from gpubot.errors import InputError, NotFoundError


class SimulatedWorkloads(OnState):
    """Deployments and StatefulSets exist through their pods (and a SimWorkload record once
    scaled): scaling removes or starts pods at once, as their controllers would."""

    async def get_workload_owner(self, *, namespace: str, pod: str) -> Workload:
        with self._cluster.reading() as state:
            kind, name = owner_from_pod(state.pod(namespace, pod).info())
            return _workload(state, namespace, kind, name)

    async def get_workload(self, *, namespace: str, kind: str, name: str) -> Workload:
        with self._cluster.reading() as state:
            return _existing(state, namespace, kind, name)

    async def scale_workload(
        self,
        *,
        namespace: str,
        kind: str,
        name: str,
        replicas: int,
        annotations: Mapping[str, str | None] | None = None,
        dry_run: bool = False,
    ) -> int:
        if kind not in SCALABLE_KINDS:
            raise InputError(f"{kind}/{name} has no scale subresource")
        if replicas < 0:
            raise InputError(f"replicas must be 0 or more, not {replicas}")
        if dry_run:
            current = await self.get_workload(namespace=namespace, kind=kind, name=name)
            return current.replicas or 0
        with self._cluster.mutation() as state:
            current = _existing(state, namespace, kind, name)
            pods = _pods_of(state, namespace, kind, name)
            record = state.workloads.get(f"{namespace}/{kind}/{name}") or SimWorkload(
                namespace, kind, name, replicas=current.replicas or 0
            )
            for key, value in (annotations or {}).items():
                if value is None:
                    record.annotations.pop(key, None)
                else:
                    record.annotations[key] = value
            if pods and record.template is None:
                record.template = _template(pods[0])
            previous, record.replicas = record.replicas, replicas
            state.workloads[record.key] = record
            # The controller's part: surplus pods go (a StatefulSet's highest ordinals first),
            # missing ones start where the scheduler finds room.
            for pod in sorted(pods, key=lambda p: p.name, reverse=True)[
                : max(0, len(pods) - replicas)
            ]:
                state.pods.remove(pod)
                for index in pod.gpu_indices:
                    state.settle(pod.node, index)
            for _ in range(replicas - len(pods)):
                _start(state, record)
            return previous


def _pods_of(state: ClusterState, namespace: str, kind: str, name: str) -> list[SimPod]:
    return [
        p
        for p in state.pods
        if p.namespace == namespace and owner_from_pod(p.info()) == (kind, name)
    ]


def _workload(state: ClusterState, namespace: str, kind: str, name: str) -> Workload:
    pods = _pods_of(state, namespace, kind, name)
    record = state.workloads.get(f"{namespace}/{kind}/{name}")
    replicas = None
    if kind in SCALABLE_KINDS:
        replicas = record.replicas if record is not None else len(pods)
    return Workload(
        namespace=namespace,
        kind=kind,
        name=name,
        replicas=replicas,
        gpus=sum(len(p.gpu_indices) for p in pods),
        pods=len(pods),
        annotations=dict(record.annotations) if record is not None else {},
    )


def _existing(state: ClusterState, namespace: str, kind: str, name: str) -> Workload:
    found = _workload(state, namespace, kind, name)
    if found.pods == 0 and f"{namespace}/{kind}/{name}" not in state.workloads:
        raise NotFoundError(f"no {kind} {namespace}/{name} in the simulated cluster")
    return found


def _template(pod: SimPod) -> dict[str, Any]:
    return {
        "workload": pod.workload,
        "container": pod.container,
        "gpus": len(pod.gpu_indices),
        "labels": dict(pod.labels),
        "annotations": dict(pod.annotations),
        "owner_kind": pod.owner_kind,
        "owner_name": pod.owner_name,
    }


def _start(state: ClusterState, record: SimWorkload) -> None:
    """A new replica from the recorded pod shape, placed as the scheduler would."""
    shape = record.template
    if shape is None:
        return  # never seen a pod of it: nothing to copy (a real controller has a template)
    rng = random.Random(f"{state.seed}/{record.key}/{len(state.pods)}")  # noqa: S311 (names)
    taken = {p.name for p in state.pods if p.namespace == record.namespace}
    if record.kind == "StatefulSet":
        name = next(
            f"{record.name}-{i}" for i in range(len(taken) + 1) if f"{record.name}-{i}" not in taken
        )
    else:
        name = f"{shape['owner_name']}-{name_suffix(rng)}"
    placement = state.schedulable_node(gpus=int(shape["gpus"]))
    node, indices = placement if placement is not None else ("", [])
    pod = SimPod(
        namespace=record.namespace,
        name=name,
        node=node,
        workload=shape["workload"],
        container=str(shape["container"]),
        created_at=datetime.now(UTC),
        gpu_indices=list(indices),
        owner_kind=str(shape["owner_kind"]),
        owner_name=str(shape["owner_name"]),
        labels=dict(shape["labels"]),
        annotations=dict(shape["annotations"]),
        phase="Running" if placement is not None else "Pending",
    )
    if record.kind == "StatefulSet":
        pod.labels["statefulset.kubernetes.io/pod-name"] = name
    state.pods.append(pod)
    for index in pod.gpu_indices:
        state.settle(node, index)
