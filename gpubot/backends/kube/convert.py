"""Client models → domain values: nodes, pods, workloads, budgets, events (pure functions)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from kubernetes.utils.quantity import parse_quantity as _parse_quantity

from gpubot.domain.fleet.cluster import (
    DEFAULT_SHM_BYTES,
    ContainerTermination,
    NodeInfo,
    PodDisruptionBudget,
    PodEvent,
    PodInfo,
    Taint,
)
from gpubot.domain.fleet.workloads import Workload

GPU_RESOURCE = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"  # e.g. nvidia.com/mig-1g.10gb (MIG "mixed" strategy)
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
SHM_PATH = "/dev/shm"  # noqa: S108 (a mount path we compare, not a file we open)


def parse_quantity(value: str) -> Decimal:
    """ "64Gi", "1500m", "8" → a number (the client's parser, which is untyped)."""
    result: Decimal = _parse_quantity(value)  # type: ignore[no-untyped-call]
    return result


def gpu_devices(resources: dict[str, str] | None) -> int:
    """Whole GPUs plus MIG slices: the devices the scheduler hands out on this node or pod."""
    total = 0
    for key, value in (resources or {}).items():
        if key == GPU_RESOURCE or key.startswith(MIG_PREFIX):
            total += int(parse_quantity(value))
    return total


def node_info(node: Any) -> NodeInfo:
    meta, spec, status = node.metadata, node.spec, node.status
    conditions = (status.conditions if status else None) or []
    ready = any(c.type == "Ready" and c.status == "True" for c in conditions)
    labels = dict(meta.labels or {})
    return NodeInfo(
        name=meta.name,
        unschedulable=bool(spec and spec.unschedulable),
        ready=ready,
        taints=tuple(
            Taint(key=t.key, value=t.value or "", effect=t.effect)
            for t in ((spec.taints if spec else None) or [])
        ),
        labels=labels,
        annotations=dict(meta.annotations or {}),
        gpu_capacity=gpu_devices(status.capacity if status else None),
        gpu_allocatable=gpu_devices(status.allocatable if status else None),
        gpu_product=labels.get(GPU_PRODUCT_LABEL, ""),
    )


def node_info_json(node: Mapping[str, Any]) -> NodeInfo:
    """node_info from a Node as the API server's JSON has it (camelCase), field for field."""
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    conditions = status.get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    labels = dict(meta.get("labels") or {})
    return NodeInfo(
        name=meta["name"],
        unschedulable=bool(spec.get("unschedulable")),
        ready=ready,
        taints=tuple(
            Taint(key=t["key"], value=t.get("value") or "", effect=t["effect"])
            for t in (spec.get("taints") or [])
        ),
        labels=labels,
        annotations=dict(meta.get("annotations") or {}),
        gpu_capacity=gpu_devices(status.get("capacity")),
        gpu_allocatable=gpu_devices(status.get("allocatable")),
        gpu_product=labels.get(GPU_PRODUCT_LABEL, ""),
        resource_version=str(meta.get("resourceVersion") or ""),
    )


def taint_json(taint: Taint) -> dict[str, str]:
    """A taint as the API's JSON spells it (an empty value is left out, as kubectl does)."""
    body = {"key": taint.key, "effect": taint.effect}
    if taint.value:
        body["value"] = taint.value
    return body


def _owner(pod: Any) -> tuple[str, str]:
    refs = pod.metadata.owner_references or []
    ref = next((r for r in refs if r.controller), refs[0] if refs else None)
    if ref is None:
        return "", ""
    if ref.kind == "ReplicaSet":
        # A Deployment names its ReplicaSets <deployment>-<pod-template-hash> and labels the
        # pods with that hash; resolving it from the name saves an API read per pod.
        suffix = "-" + (pod.metadata.labels or {}).get("pod-template-hash", "\0")
        if ref.name.endswith(suffix):
            return "Deployment", ref.name[: -len(suffix)]
    return str(ref.kind), str(ref.name)


def _container_gpus(container: Any) -> int:
    res = container.resources
    if res is None:
        return 0
    # Extended resources must set limits; requests, when given, equal them.
    return gpu_devices(res.limits) or gpu_devices(res.requests)


def _shm_bytes(pod: Any, container: Any, memory_limit: int | None) -> int:
    volumes = {v.name: v for v in (pod.spec.volumes or [])}
    for mount in container.volume_mounts or []:
        volume = volumes.get(mount.name)
        if mount.mount_path != SHM_PATH or volume is None or volume.empty_dir is None:
            continue
        if volume.empty_dir.medium != "Memory":
            continue
        if volume.empty_dir.size_limit:
            return int(parse_quantity(volume.empty_dir.size_limit))
        # Memory-backed and unbounded: the container's memory limit is what bounds it.
        return memory_limit if memory_limit is not None else DEFAULT_SHM_BYTES
    return DEFAULT_SHM_BYTES


def pod_info(pod: Any) -> PodInfo:
    meta, spec, status = pod.metadata, pod.spec, pod.status
    containers = spec.containers or []
    main = next((c for c in containers if _container_gpus(c) > 0), containers[0])
    limits = (main.resources.limits if main.resources else None) or {}
    memory = int(parse_quantity(limits["memory"])) if "memory" in limits else None
    statuses = {s.name: s for s in ((status.container_statuses if status else None) or [])}
    main_status = statuses.get(main.name)
    last = None
    if main_status is not None and main_status.last_state and main_status.last_state.terminated:
        t = main_status.last_state.terminated
        last = ContainerTermination(
            container=main.name,
            reason=t.reason or "",
            exit_code=int(t.exit_code),
            signal=t.signal,
            message=t.message or "",
            finished_at=t.finished_at,
        )
    owner_kind, owner_name = _owner(pod)
    return PodInfo(
        namespace=meta.namespace,
        name=meta.name,
        node=spec.node_name or "",
        phase=(status.phase if status else None) or "Pending",
        gpu_request=sum(_container_gpus(c) for c in containers),
        owner_kind=owner_kind,
        owner_name=owner_name,
        labels=dict(meta.labels or {}),
        annotations=dict(meta.annotations or {}),
        created_at=meta.creation_timestamp,
        container=main.name,
        restart_count=main_status.restart_count if main_status else 0,
        last_terminated=last,
        memory_limit_bytes=memory,
        shm_size_bytes=_shm_bytes(pod, main, memory),
        deletion_timestamp=meta.deletion_timestamp,
        deletion_grace_seconds=meta.deletion_grace_period_seconds,
        uid=meta.uid or "",
    )


def pod_info_json(pod: Mapping[str, Any]) -> PodInfo:
    """pod_info from a Pod as the API server's JSON has it (camelCase), field for field: a
    list of pods read this way builds no client models."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    containers = spec.get("containers") or []
    main = next((c for c in containers if _container_gpus_json(c) > 0), containers[0])
    limits = (main.get("resources") or {}).get("limits") or {}
    memory = int(parse_quantity(limits["memory"])) if "memory" in limits else None
    statuses = {s.get("name"): s for s in (status.get("containerStatuses") or [])}
    main_status = statuses.get(main.get("name"))
    last = None
    terminated = ((main_status or {}).get("lastState") or {}).get("terminated")
    if terminated:
        last = ContainerTermination(
            container=main["name"],
            reason=terminated.get("reason") or "",
            exit_code=int(terminated["exitCode"]),
            signal=terminated.get("signal"),
            message=terminated.get("message") or "",
            finished_at=_instant(terminated.get("finishedAt")),
        )
    labels = dict(meta.get("labels") or {})
    owner_kind, owner_name = _owner_json(meta.get("ownerReferences") or [], labels)
    return PodInfo(
        namespace=meta["namespace"],
        name=meta["name"],
        node=spec.get("nodeName") or "",
        phase=status.get("phase") or "Pending",
        gpu_request=pod_gpus_json(pod),
        owner_kind=owner_kind,
        owner_name=owner_name,
        labels=labels,
        annotations=dict(meta.get("annotations") or {}),
        created_at=_instant(meta.get("creationTimestamp")),
        container=main["name"],
        restart_count=int((main_status or {}).get("restartCount") or 0),
        last_terminated=last,
        memory_limit_bytes=memory,
        shm_size_bytes=_shm_bytes_json(spec, main, memory),
        deletion_timestamp=_instant(meta.get("deletionTimestamp")),
        deletion_grace_seconds=meta.get("deletionGracePeriodSeconds"),
        uid=meta.get("uid") or "",
    )


def _instant(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _owner_json(refs: list[dict[str, Any]], labels: Mapping[str, str]) -> tuple[str, str]:
    ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    if ref is None:
        return "", ""
    if ref["kind"] == "ReplicaSet":
        suffix = "-" + labels.get("pod-template-hash", "\0")
        if ref["name"].endswith(suffix):
            return "Deployment", ref["name"][: -len(suffix)]
    return str(ref["kind"]), str(ref["name"])


def pod_gpus_json(pod: Mapping[str, Any]) -> int:
    """The GPUs (and MIG slices) a pod's containers ask for, from the API server's JSON."""
    return sum(_container_gpus_json(c) for c in (pod.get("spec") or {}).get("containers") or [])


def _container_gpus_json(container: Mapping[str, Any]) -> int:
    res = container.get("resources")
    if not res:
        return 0
    return gpu_devices(res.get("limits")) or gpu_devices(res.get("requests"))


def _shm_bytes_json(
    spec: Mapping[str, Any], container: Mapping[str, Any], memory_limit: int | None
) -> int:
    volumes = {v["name"]: v for v in (spec.get("volumes") or [])}
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount["name"])
        if mount.get("mountPath") != SHM_PATH or volume is None:
            continue
        empty_dir = volume.get("emptyDir")
        if empty_dir is None or empty_dir.get("medium") != "Memory":
            continue
        if empty_dir.get("sizeLimit"):
            return int(parse_quantity(empty_dir["sizeLimit"]))
        return memory_limit if memory_limit is not None else DEFAULT_SHM_BYTES
    return DEFAULT_SHM_BYTES


def controller_of(meta: Any) -> tuple[str, str] | None:
    """(kind, name) of the object's controlling owner reference, if it has one."""
    refs = meta.owner_references or []
    ref = next((r for r in refs if r.controller), None)
    return (str(ref.kind), str(ref.name)) if ref is not None else None


def selector_text(match_labels: dict[str, str] | None) -> str:
    """A label selector for list calls (matchLabels only: what Deployments set)."""
    return ",".join(f"{k}={v}" for k, v in sorted((match_labels or {}).items()))


def workload_info(obj: Any, *, kind: str, pods: list[PodInfo]) -> Workload:
    """A Deployment or StatefulSet with the pods its selector matches now."""
    meta = obj.metadata
    replicas = obj.spec.replicas if obj.spec is not None else None
    live = [p for p in pods if p.phase not in ("Succeeded", "Failed")]
    return Workload(
        namespace=meta.namespace,
        kind=kind,
        name=meta.name,
        replicas=int(replicas if replicas is not None else 1),  # the API's default is 1
        gpus=sum(p.gpu_request for p in live),
        pods=len(live),
        annotations=dict(meta.annotations or {}),
    )


def bare_pod(pod: PodInfo) -> Workload:
    return Workload(
        namespace=pod.namespace,
        kind="Pod",
        name=pod.name,
        gpus=pod.gpu_request,
        pods=1,
        annotations=dict(pod.annotations),
    )


def pdb_info(pdb: Any) -> PodDisruptionBudget:
    selector = pdb.spec.selector
    return PodDisruptionBudget(
        namespace=pdb.metadata.namespace,
        name=pdb.metadata.name,
        selector=dict((selector.match_labels if selector else None) or {}),
        disruptions_allowed=int((pdb.status.disruptions_allowed if pdb.status else 0) or 0),
    )


def pod_event(event: Any) -> PodEvent:
    return PodEvent(
        type=event.type or "Normal",
        reason=event.reason or "",
        message=event.message or "",
        count=event.count or 1,
        last_seen=event.last_timestamp or event.event_time,
    )
