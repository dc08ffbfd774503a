"""Faults and workloads to inject into a SimulatedCluster: XIDs, heat, OOM kills, idle pods."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Literal

from gpubot.backends.simulated.cluster import SimulatedCluster
from gpubot.domain.fleet.cluster import GpuState
from gpubot.errors import InputError

OomKind = Literal["cuda", "host"]

# XID 79: the GPU has fallen off the bus; NVML can no longer read it.
XID_GPU_LOST = 79


def inject_xid(
    cluster: SimulatedCluster, *, node: str, gpu: int = 0, xid: int = XID_GPU_LOST
) -> GpuState:
    """Record an XID error on one GPU; XID 79 also loses the GPU (no utilisation, no power)."""
    with cluster.mutation() as state:
        sim_node = state.node(node)
        current = sim_node.gpu(gpu)
        errors = current.xid_errors if xid in current.xid_errors else (*current.xid_errors, xid)
        updated = replace(current, xid_errors=errors)
        if xid == XID_GPU_LOST:
            updated = replace(updated, lost=True, utilization_pct=0, power_draw_w=0.0)
        sim_node.set_gpu(updated)
        return updated


def stop_kubelet(cluster: SimulatedCluster, *, node: str) -> None:
    """The node's kubelet is gone (a node hung after XID 79): it goes NotReady, and pods
    evicted from it stay terminating until deleted with grace period 0."""
    with cluster.mutation() as state:
        sim_node = state.node(node)
        sim_node.kubelet = False
        sim_node.ready = False


def thermal_runaway(
    cluster: SimulatedCluster, *, node: str, gpu: int, temperature_c: int = 92
) -> GpuState:
    """Overheat one GPU: failing cooling with the GPU still drawing its full power limit."""
    with cluster.mutation() as state:
        sim_node = state.node(node)
        current = sim_node.gpu(gpu)
        updated = replace(
            current,
            temperature_c=temperature_c,
            power_draw_w=current.power_limit_w,
            utilization_pct=max(current.utilization_pct, 90),
        )
        sim_node.set_gpu(updated)
        return updated


def oom_kill(
    cluster: SimulatedCluster,
    *,
    namespace: str,
    pod: str,
    kind: OomKind = "cuda",
    at: datetime | None = None,
) -> dict[str, str | int]:
    """Kill a pod's container for lack of memory and record its last terminated state.

    `cuda`: the framework raises CUDA out-of-memory and the process exits 1 ("Error"), with
    the GPUs it held full. `host`: the kernel OOM killer sends SIGKILL ("OOMKilled", 137).
    The message holds the log tail, as with terminationMessagePolicy FallbackToLogsOnError.
    """
    if kind not in ("cuda", "host"):
        raise InputError(f"oom_kill kind must be 'cuda' or 'host', not {kind!r}")
    finished = (at or datetime.now(UTC)).isoformat()
    with cluster.mutation() as state:
        sim_pod = state.pod(namespace, pod)
        if kind == "cuda":
            last: dict[str, str | int] = {
                "reason": "Error",
                "exitCode": 1,
                "message": (
                    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. "
                    "GPU 0 has a total capacity of 79.10 GiB of which 1.06 GiB is free."
                ),
            }
            sim_node = state.node(sim_pod.node)
            for index in sim_pod.gpu_indices:
                current = sim_node.gpu(index)
                sim_node.set_gpu(replace(current, memory_used_mib=current.memory_total_mib - 1086))
        else:
            last = {
                "reason": "OOMKilled",
                "exitCode": 137,
                "signal": 9,
                "message": "Memory cgroup out of memory: Killed process (python)",
            }
        sim_pod.last_state = {**last, "container": sim_pod.container, "finishedAt": finished}
        sim_pod.restart_count += 1
        return dict(sim_pod.last_state)


def child_oom_kill(
    cluster: SimulatedCluster, *, namespace: str, pod: str, at: datetime | None = None
) -> dict[str, str | int]:
    """The memory cgroup's OOM killer kills a child of the container's main process (a
    launcher's worker), and the launcher exits 1 saying only that its child got SIGKILL: the
    pod's log cannot tell why. The node's kernel log says it: the OOM killer's lines, in
    journalctl's short-iso form, name the pod's cgroup by its UID."""
    when = at or datetime.now(UTC)
    stamp = when.isoformat(timespec="seconds")
    with cluster.mutation() as state:
        sim_pod = state.pod(namespace, pod)
        cgroup = (
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
            f"{sim_pod.uid.replace('-', '_')}.slice/cri-containerd-"
            f"{hashlib.sha256(sim_pod.ref.encode()).hexdigest()}.scope"
        )
        host = sim_pod.node
        state.node(host).kernel_log += [
            f"{stamp} {host} kernel: python invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), "
            "order=0, oom_score_adj=939",
            f"{stamp} {host} kernel: memory: usage 67108864kB, limit 67108864kB, failcnt 18",
            f"{stamp} {host} kernel: oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),"
            f"cpuset=cri-containerd,mems_allowed=0-1,oom_memcg={cgroup},task_memcg={cgroup},"
            "task=python,pid=4242,uid=0",
            f"{stamp} {host} kernel: Memory cgroup out of memory: Killed process 4242 (python) "
            "total-vm:98765432kB, anon-rss:66000000kB, file-rss:0kB, shmem-rss:0kB, UID:0",
        ]
        sim_pod.last_state = {
            "reason": "Error",
            "exitCode": 1,
            "message": (
                "torch.distributed.elastic.multiprocessing.api: failed (exitcode: -9) "
                "local_rank: 0 (pid: 4242) of binary: /usr/bin/python\n"
                "Signal 9 (SIGKILL) received by PID 4242"
            ),
            "container": sim_pod.container,
            "finishedAt": when.isoformat(),
        }
        sim_pod.restart_count += 1
        return dict(sim_pod.last_state)


def idle_pods(cluster: SimulatedCluster, *, namespace: str, count: int) -> list[str]:
    """Make `count` GPU-holding pods in a namespace idle (GPUs held at ~0 %); return their refs."""
    with cluster.mutation() as state:
        candidates = sorted(
            (p for p in state.pods if p.namespace == namespace and p.gpu_indices and p.node),
            # Busy pods first, so the count is of pods that were not idle already.
            key=lambda p: (p.workload == "idle", p.name),
        )
        if count < 0 or count > len(candidates):
            raise InputError(
                f"namespace {namespace} has {len(candidates)} pods holding GPUs, "
                f"so {count} cannot be made idle"
            )
        chosen = candidates[:count]
        for sim_pod in chosen:
            sim_pod.workload = "idle"
            for index in sim_pod.gpu_indices:
                state.settle(sim_pod.node, index)
        return [p.ref for p in chosen]


def idle_alert(
    cluster: SimulatedCluster,
    *,
    namespace: str,
    pod: str,
    status: Literal["firing", "resolved"] = "firing",
    starts_at: str = "2026-11-22T07:30:00Z",
) -> dict[str, Any]:
    """The Alertmanager (webhook v4) body GPUIdleAllocated sends for one pod: one alert per
    GPU it holds, labelled as the DCGM exporter and deploy/prometheus/gpubot-rules.yaml do."""
    state = cluster.snapshot()
    sim_pod = state.pod(namespace, pod)
    node = state.node(sim_pod.node)
    gpus = [node.gpu(i) for i in sim_pod.gpu_indices]
    alerts = []
    for gpu in gpus:
        labels = {
            "alertname": "GPUIdleAllocated",
            "Hostname": node.name,
            "gpu": str(gpu.index),
            "UUID": gpu.uuid,
            "modelName": gpu.name,
            "namespace": namespace,
            "pod": pod,
            "container": sim_pod.container,
            "cluster": cluster.name,
            "severity": "info",
        }
        fingerprint = hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()
        alerts.append(
            {
                "status": status,
                "labels": labels,
                "annotations": {
                    "summary": f"GPU {gpu.index} on {node.name} held by {namespace}/{pod} is idle",
                    "description": "Average utilisation under 5% over the last hour "
                    "while allocated.",
                },
                "startsAt": starts_at,
                "endsAt": "2026-11-22T12:00:00Z"
                if status == "resolved"
                else "0001-01-01T00:00:00Z",
                "generatorURL": "http://prometheus:9090/graph?g0.expr=DCGM_FI_DEV_GPU_UTIL",
                "fingerprint": fingerprint[:16],
            }
        )
    group = {"alertname": "GPUIdleAllocated", "cluster": cluster.name, "Hostname": node.name}
    return {
        "receiver": "gpubot",
        "status": status,
        "alerts": alerts,
        "groupLabels": group,
        "commonLabels": group,
        "commonAnnotations": {},
        "externalURL": "http://alertmanager:9093",
        "version": "4",
        "groupKey": "{}:" + json.dumps(group, sort_keys=True),
        "truncatedAlerts": 0,
    }


def recover_node(cluster: SimulatedCluster, *, node: str) -> list[GpuState]:
    """Bring a node's GPUs back: XIDs cleared, none lost, readings back to their workload's."""
    with cluster.mutation() as state:
        sim_node = state.node(node)
        for current in list(sim_node.gpus):
            sim_node.set_gpu(replace(current, lost=False, xid_errors=()))
            state.settle(node, current.index)
        return list(sim_node.gpus)


def fail_diag(
    cluster: SimulatedCluster,
    *,
    node: str,
    gpu: int = 0,
    test: str = "memory",
    message: str = "",
) -> None:
    """Make DCGM diagnostics fail `test` on one GPU, with DCGM's `message`, at every level,
    until pass_diag (a GPU that resets cleanly but is still bad: a verify catches it)."""
    text = message or (
        f"GPU {gpu} Error using CUDA API cuCtxCreate Check DCGM and system logs for errors. "
        "Reset GPU. Restart DCGM. Rerun diagnostics."
    )
    with cluster.mutation() as state:
        sim_node = state.node(node)
        sim_node.gpu(gpu)  # NotFoundError for a GPU the node lacks
        sim_node.diag_failures.setdefault(str(gpu), {})[test] = text


def dcgm_unavailable(
    cluster: SimulatedCluster,
    *,
    node: str,
    reason: str = "dcgmi is not installed (not on the agent's PATH)",
) -> None:
    """DCGM cannot run on the node (as the default image, without dcgmi, or a node without
    a host engine): diagnostics are refused with `reason` until dcgm_available."""
    with cluster.mutation() as state:
        state.node(node).dcgm_unavailable = reason


def dcgm_available(cluster: SimulatedCluster, *, node: str) -> None:
    with cluster.mutation() as state:
        state.node(node).dcgm_unavailable = ""


def pass_diag(cluster: SimulatedCluster, *, node: str) -> None:
    """Every DCGM diagnostic passes on the node again."""
    with cluster.mutation() as state:
        state.node(node).diag_failures.clear()


def evidence_fails(
    cluster: SimulatedCluster,
    *,
    node: str,
    reason: str = "evidence is already being gathered on this node",
) -> None:
    """Make the node agent refuse to gather evidence on `node` (a hung agent, a busy node)."""
    with cluster.mutation() as state:
        state.node(node).evidence_failure = reason
