"""Slurm in the ports' terms: a job listed as a pod, gpubot's own drain reasons."""

from __future__ import annotations

import re
from datetime import datetime

from gpubot.domain.fleet.cluster import NodeInfo, PodInfo, Taint, TaintEffect

# A job is listed as a pod in this namespace, named by its numeric job id.
JOB_NAMESPACE = "slurm"
# Every drain reason gpubot writes starts with this (the same test as a foreign cordon).
REASON_PREFIX = "gpubot "
# A node gpubot sent for hardware service: its drain reason starts with this.
SERVICE_PREFIX = "gpubot hardware-service: "
JOB_LABEL = "slurm.schedmd.com/job"
USER_LABEL = "slurm.schedmd.com/user"
ACCOUNT_LABEL = "slurm.schedmd.com/account"
PARTITION_LABEL = "slurm.schedmd.com/partition"
NAME_LABEL = "slurm.schedmd.com/job-name"
# The node's or job's state as Slurm prints it; on a node, also what marks it a Slurm node.
STATE_ANNOTATION = "slurm.schedmd.com/state"
JOB_KIND = "SlurmJob"  # a pod's owner_kind when it is a Slurm job
# What a drain does to the job: requeue, cancel, or refuse (cannot be requeued, and the
# config does not allow cancelling it).
DRAIN_ANNOTATION = "gpubot.io/on-drain"


def job_line(pod: PodInfo, *, now: datetime) -> str:
    """One job as an HPC admin reads it: id, user, account, partition, GPUs, elapsed."""
    labels = pod.labels
    elapsed = ""
    if pod.created_at is not None:
        seconds = max(0, int((now - pod.created_at).total_seconds()))
        hours, rest = divmod(seconds, 3600)
        elapsed = f", elapsed {hours}:{rest // 60:02d}:{rest % 60:02d}"
    return (
        f"job {labels.get(JOB_LABEL, pod.name)} (user {labels.get(USER_LABEL) or '?'}, "
        f"account {labels.get(ACCOUNT_LABEL) or '-'}, "
        f"partition {labels.get(PARTITION_LABEL) or '-'}, {pod.gpu_request} GPU(s){elapsed})"
    )


def is_job(pod: PodInfo) -> bool:
    return pod.owner_kind == JOB_KIND


def drain_plan(node: str, jobs: list[PodInfo], *, now: datetime) -> str:
    """What a drain does on a Slurm node, one line per job."""
    if not jobs:
        return f"no jobs on {node}: wait for Slurm to report it DRAINED"
    lines = [
        f"{pod.annotations.get(DRAIN_ANNOTATION, 'requeue')} {job_line(pod, now=now)}"
        for pod in jobs[:50]
    ]
    more = f"; and {len(jobs) - 50} more" if len(jobs) > 50 else ""
    return (
        f"take {len(jobs)} Slurm job(s) off {node}, then wait for DRAINED: "
        + "; ".join(lines)
        + more
    )


def is_slurm(node: NodeInfo) -> bool:
    """A node read from Slurm (plans say drain/resume, not cordon/uncordon)."""
    return STATE_ANNOTATION in node.annotations


# Slurm has no taints: gpubot keeps its own in its drain reason, each as " [key=value:effect]".
_TAINT = re.compile(
    r" \[([A-Za-z0-9./_-]{1,316})(?:=([A-Za-z0-9._-]{0,63}))?:"
    r"(NoSchedule|PreferNoSchedule|NoExecute)\]",
    re.ASCII,
)
_EFFECTS: dict[str, TaintEffect] = {
    "NoSchedule": "NoSchedule",
    "PreferNoSchedule": "PreferNoSchedule",
    "NoExecute": "NoExecute",
}


def reason_taints(reason: str) -> tuple[Taint, ...]:
    """The taints kept in a drain reason gpubot wrote; none in anyone else's."""
    if not reason.startswith(REASON_PREFIX):
        return ()
    return tuple(
        Taint(key=m.group(1), value=m.group(2) or "", effect=_EFFECTS[m.group(3)])
        for m in _TAINT.finditer(reason)
    )


def with_taint(reason: str, taint: Taint, *, present: bool, limit: int) -> str:
    """`reason` with `taint` added or removed; the run's words are cut, never a taint."""
    kept = [t for t in reason_taints(reason) if (t.key, t.effect) != (taint.key, taint.effect)]
    if present:
        kept.append(taint)
    base = _TAINT.sub("", reason).rstrip()
    suffix = "".join(f" [{t}]" for t in kept)
    return base[: max(0, limit - len(suffix))].rstrip() + suffix
