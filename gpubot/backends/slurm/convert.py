"""Slurm's nodes and jobs as the ports' values: a drained node is a cordoned one, a job a pod."""

from __future__ import annotations

from datetime import UTC, datetime

from gpubot.backends.slurm.models import SlurmJob, SlurmNode, gpu_count, gpu_type
from gpubot.domain.fleet.cluster import (
    CORDON_BY_ANNOTATION,
    CORDON_REASON_ANNOTATION,
    ContainerTermination,
    NodeInfo,
    PodInfo,
)
from gpubot.domain.fleet.slurm import (
    ACCOUNT_LABEL,
    DRAIN_ANNOTATION,
    JOB_KIND,
    JOB_LABEL,
    JOB_NAMESPACE,
    NAME_LABEL,
    PARTITION_LABEL,
    SERVICE_PREFIX,
    STATE_ANNOTATION,
    USER_LABEL,
    reason_taints,
)
from gpubot.domain.runbooks.left_behind import REBOOT_LABEL, SERVICE_LABEL

# Job states in which the job still holds its nodes.
ON_NODE = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING", "STOPPED", "SIGNALING"})
# A finished job's state, as a container's last terminated reason (what OOM triage reads).
_TERMINATION = {
    "OUT_OF_MEMORY": "OOMKilled",
    "FAILED": "Error",
    "COMPLETED": "Completed",
    "CANCELLED": "Cancelled",
    "TIMEOUT": "DeadlineExceeded",
    "NODE_FAIL": "NodeFail",
    "PREEMPTED": "Preempted",
    "BOOT_FAIL": "BootFail",
    "DEADLINE": "DeadlineExceeded",
}
# slurm.h's SIG_OOM (253) as a wait status: the dummy signal 125 (with the core-dump bit) that
# slurmstepd reports for a step its memory cgroup OOM-killed; sacct prints it as 0:125.
_SIG_OOM = 253 & 0x7F
_SIGKILL = 9


def _instant(seconds: int) -> datetime | None:
    return datetime.fromtimestamp(seconds, UTC) if seconds > 0 else None


def state_text(node: SlurmNode) -> str:
    """As sinfo's %T prints it: drained, draining, down+drain, idle, …"""
    flags = sorted(node.flags)
    if node.drain:
        if node.down:
            return "down+drain"
        return "draining" if node.busy else "drained"
    return "+".join([node.state, *[f.lower() for f in flags]])


def node_info(node: SlurmNode) -> NodeInfo:
    """`unschedulable`: drained, draining or down (nothing new starts there); the drain
    reason and who set it are the cordon annotations, so a reason that does not start with
    "gpubot " is someone else's, as a foreign cordon is."""
    out_of_service = node.drain or node.down
    annotations = {STATE_ANNOTATION: state_text(node)}
    if out_of_service:
        annotations[CORDON_REASON_ANNOTATION] = node.reason
        annotations[CORDON_BY_ANNOTATION] = node.reason_set_by_user or "slurm"
    labels = {
        PARTITION_LABEL: ",".join(node.partitions),
        "slurm.schedmd.com/features": node.active_features,
    }
    if node.flags & {"REBOOT_REQUESTED", "REBOOT_ISSUED"}:
        labels[REBOOT_LABEL] = "true"
    if node.reason.startswith(SERVICE_PREFIX) and out_of_service:
        labels[SERVICE_LABEL] = "rma"
    gpus = gpu_count(node.gres)
    return NodeInfo(
        name=node.name,
        unschedulable=out_of_service,
        ready=not node.down and "NOT_RESPONDING" not in node.flags,
        draining=node.drain and node.busy,
        taints=reason_taints(node.reason) if out_of_service else (),
        labels=labels,
        annotations=annotations,
        gpu_capacity=gpus,
        gpu_allocatable=gpus,
        gpu_product=gpu_type(node.gres),
    )


def on_drain_of(job: SlurmJob, drain_jobs: str) -> str:
    """What node.drain does to this job under `slurm.drain_jobs`."""
    if drain_jobs == "cancel":
        return "cancel"
    if job.requeue and job.batch_flag:
        return "requeue"
    return "cancel" if drain_jobs == "requeue_or_cancel" else "refuse (cannot be requeued)"


def job_pod(job: SlurmJob, node: str, *, now: datetime, on_drain: str = "requeue") -> PodInfo:
    """A job as a pod on `node`: COMPLETING is a pod terminating (its epilog still runs)."""
    return PodInfo(
        namespace=JOB_NAMESPACE,
        name=str(job.job_id),
        node=node,
        phase=_phase(job.job_state),
        gpu_request=job.gpus_on(node) if node else 0,
        owner_kind=JOB_KIND,
        owner_name=job.job_ref,
        labels={
            JOB_LABEL: job.job_ref,
            USER_LABEL: job.user_name,
            ACCOUNT_LABEL: job.account,
            PARTITION_LABEL: job.partition,
            NAME_LABEL: job.name,
        },
        annotations={STATE_ANNOTATION: job.job_state, DRAIN_ANNOTATION: on_drain},
        created_at=_instant(job.start_time) or _instant(job.submit_time),
        container=job.name,
        restart_count=job.restart_cnt,
        last_terminated=_terminated(job),
        memory_limit_bytes=job.memory_per_node * 1024 * 1024 if job.memory_per_node else None,
        deletion_timestamp=now if job.job_state == "COMPLETING" else None,
    )


def _phase(state: str) -> str:
    if state in ON_NODE:
        return "Running"
    if state in ("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING"):
        return "Pending"
    return "Succeeded" if state == "COMPLETED" else "Failed"


def _terminated(job: SlurmJob) -> ContainerTermination | None:
    """Slurm's exit_code is the batch script's wait status: an exit status in the high byte,
    or the signal that killed it in the low seven bits. A signal reads as a container
    runtime reports it, 128 + the signal (137 for SIGKILL), not as an exit status of 9."""
    reason = _TERMINATION.get(job.job_state)
    if reason is None:
        return None
    signal = job.exit_code & 0x7F if job.exit_code <= 0xFF else 0
    if signal == _SIG_OOM:
        signal = _SIGKILL  # the kernel's OOM killer sent SIGKILL; Slurm reports a dummy
    return ContainerTermination(
        container=job.name,
        reason=reason,
        exit_code=128 + signal if signal else job.exit_code >> 8,
        signal=signal or None,
        message=f"Slurm job {job.job_ref} ended {job.job_state}",
    )
