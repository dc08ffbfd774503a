"""The OOM triage's other sources: the node's kernel log around the death, memory metrics,
and on Slurm the job's accounting state."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpubot.actions.base import ActionContext
from gpubot.domain.fleet.cluster import PodInfo
from gpubot.domain.fleet.slurm import JOB_KIND, STATE_ANNOTATION
from gpubot.errors import GpubotError
from gpubot.knowledge.oom.sources import Sources

MIB = 1024 * 1024
# The kernel log is read this far either side of the death: the OOM killer's report comes
# just before the container's exit, the kubelet's notice of it a little after.
KERNEL_WINDOW = timedelta(minutes=5)


async def kernel_log(ctx: ActionContext, pod: PodInfo, died: datetime | None) -> str | None:
    """The pod's node's kernel lines around its death (now, if the death time is not known);
    None when the cluster's agents serve no kernel log or the node's agent cannot be asked."""
    reader = ctx.cluster.kernel_logs
    if reader is None or not pod.node:
        return None
    at = died or datetime.now(UTC)
    try:
        return await reader.kernel_log(
            node=pod.node, since=at - KERNEL_WINDOW, until=at + KERNEL_WINDOW
        )
    except GpubotError:
        return None  # the agent is down or cannot read the journal: a missing source


async def _peak(ctx: ActionContext, promql: str) -> float | None:
    try:
        samples = await ctx.cluster.metrics.query(promql=promql)
    except GpubotError:
        return None  # Prometheus unreachable, or the series not scraped: a missing source
    return max((s.value for s in samples), default=None)


async def working_set_peak(ctx: ActionContext, pod: PodInfo, window: str) -> float | None:
    """The container's highest memory working set over the window (cAdvisor, bytes)."""
    labels = f'namespace="{pod.namespace}",pod="{pod.name}",container="{pod.container}"'
    return await _peak(
        ctx, f"max_over_time(container_memory_working_set_bytes{{{labels}}}[{window}])"
    )


async def gpu_used_peak_mib(ctx: ActionContext, pod: PodInfo, window: str) -> float | None:
    """The pod's GPUs' highest framebuffer use over the window (DCGM_FI_DEV_FB_USED, MiB)."""
    selector = f'DCGM_FI_DEV_FB_USED{{namespace="{pod.namespace}",pod="{pod.name}"}}'
    return await _peak(ctx, f"max_over_time({selector}[{window}])")


async def gather_sources(
    ctx: ActionContext,
    pod: PodInfo,
    *,
    died: datetime | None,
    window: str,
    device_bytes: int | None,
) -> Sources:
    """Everything but the log, each None where it could not be read."""
    used = await gpu_used_peak_mib(ctx, pod, window)
    return Sources(
        kernel_log=await kernel_log(ctx, pod, died),
        pod_uid=pod.uid,
        working_set_bytes=await working_set_peak(ctx, pod, window),
        memory_limit_bytes=pod.memory_limit_bytes,
        gpu_used_mib=used,
        gpu_total_mib=device_bytes / MIB if device_bytes else None,
        shm_bytes=pod.shm_size_bytes,
        on_slurm=pod.owner_kind == JOB_KIND,
        job_state=pod.annotations.get(STATE_ANNOTATION) or None,
    )
