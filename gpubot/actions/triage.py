"""Read-only triage steps: why a pod died of memory, and what an XID means."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from gpubot.actions.base import (
    ActionContext,
    ActionSpec,
    Output,
    Params,
    PlanNote,
    nothing_to_check,
)
from gpubot.domain.fleet.slurm import is_job
from gpubot.domain.k8s_names import Namespace, PodName
from gpubot.domain.runbooks.action_names import Action
from gpubot.domain.runbooks.durations import parse_duration
from gpubot.errors import GpubotError
from gpubot.knowledge.xid.catalog import explain

if TYPE_CHECKING:
    from gpubot.knowledge.oom.triage import Triage

LOG_LINES = 200
MIB = 1024 * 1024
_REASON = re.compile(r"[A-Za-z]{1,40}", re.ASCII)


class OomParams(Params):
    namespace: Namespace
    pod: PodName
    window: str = "15m"  # how far back to look for the pod's GPU memory peak
    # The alert's own `reason` label (kube-state-metrics' last terminated reason): it still
    # says OOMKilled when the pod's status or logs no longer do (a Job pod replaced, logs gone).
    reason: str = ""

    @field_validator("reason")
    @classmethod
    def _reason(cls, value: str) -> str:
        # A label from outside: kept only when it is a plain reason word, else ignored.
        return value if _REASON.fullmatch(value) else ""

    @field_validator("window")
    @classmethod
    def _window(cls, value: str) -> str:
        seconds = parse_duration(value)
        if not 60 <= seconds <= 86400:
            raise ValueError("window must be between 1m and 24h")
        return value


async def _device_bytes(ctx: ActionContext, node: str) -> int | None:
    """The GPU's memory from the node's product label ("NVIDIA H100 80GB HBM3"), if it says."""
    if not node:
        return None
    try:
        info = await ctx.cluster.nodes.get_node(node=node)
    except GpubotError:
        return None
    from gpubot.knowledge.oom.allocator_numbers import device_capacity

    return device_capacity(info.gpu_product) if info.gpu_product else None


SLURM_CAUSE_ADVICE = (
    "Read `sacct -j <job> --format=JobID,State,Elapsed,Timelimit,Reason` for the limit or "
    "request that ended it (raise --time, resubmit after a preemption)."
)


async def gather_oom(ctx: ActionContext, p: OomParams) -> Output:
    # The classifier's rule tables load when a triage step runs, not with the registry that
    # `runbooks validate` and `plan` build.
    from gpubot.actions.oom_evidence import gather_sources
    from gpubot.knowledge.oom.sources import combine
    from gpubot.knowledge.oom.triage import classify

    k8s = ctx.cluster
    pod = await k8s.pods.get_pod(namespace=p.namespace, name=p.pod)
    last = pod.last_terminated
    try:
        logs = await k8s.pods.pod_logs(
            namespace=p.namespace,
            name=p.pod,
            container=pod.container or None,
            previous=last is not None,
            tail_lines=LOG_LINES,
        )
    except GpubotError:
        logs = ""  # the previous container's logs are gone: judge from the status and alert
    events = await k8s.pods.pod_events(namespace=p.namespace, name=p.pod)
    liveness = any("Liveness probe failed" in e.message for e in events)
    # Warning events carry evidence of their own (Evicted for memory, OOMKilling, Unhealthy).
    warnings = "\n".join(f"{e.reason}: {e.message}" for e in events if e.type == "Warning")
    text = "\n".join(x for x in (logs, last.message if last else "", warnings) if x)
    own_reason = last.reason if last else None
    if is_job(pod):
        # A Slurm job's reason, message and events are all its accounting state, which is a
        # source of its own (job_accounting): judged here too, they would make its output
        # file look decisive when it only says "Killed".
        text, own_reason = logs, None
    device = await _device_bytes(ctx, pod.node)

    def judge(log: str, reason: str | None = own_reason) -> Triage:
        return classify(
            log,
            exit_code=last.exit_code if last else None,
            reason=reason,
            alert_reason=p.reason or None,
            shm_bytes=pod.shm_size_bytes,
            liveness_failed=liveness,
            device_bytes=device,
        )

    verdict = judge(text)
    died = last.finished_at if last else None
    sources = await gather_sources(ctx, pod, died=died, window=p.window, device_bytes=device)
    combined = combine(verdict, sources)
    advice: dict[str, object] = {}
    if combined.kernel_lines and combined.cls != verdict.cls:
        # The kernel log decided: the verdict and its advice are those of the kernel's lines.
        verdict = judge("\n".join((*combined.kernel_lines, text)))
    elif combined.family == "slurm_out_of_memory":
        # Slurm's accounting says its memory cgroup killed the job: judged as OOMKilled.
        verdict = judge(text, reason="OOMKilled")
    elif combined.family == "slurm_job_ended_for_cause":
        # Slurm's accounting gave the SIGKILL its cause: say so, not how to find one.
        advice = {"advice": [f"{combined.evidence[0]}: not an OOM. {SLURM_CAUSE_ADVICE}"]}
    peak = sources.gpu_used_mib
    return {
        **verdict.as_json(),
        **advice,
        "class": combined.cls,
        "family": combined.family,
        "confidence": combined.confidence,
        "evidence": list(combined.evidence),
        **combined.as_json(),
        "pod": pod.ref,
        "node": pod.node,
        "container": last.container if last else pod.container,
        "restart_count": pod.restart_count,
        "last_state": {"reason": last.reason, "exit_code": last.exit_code} if last else None,
        "memory_limit_mib": pod.memory_limit_bytes // MIB if pod.memory_limit_bytes else None,
        "shm_mib": pod.shm_size_bytes // MIB,
        "gpu_memory_peak_mib": peak,
        "gpu_request": pod.gpu_request,
        "warning_events": [f"{e.reason}: {e.message}" for e in events if e.type == "Warning"],
    }


def oom_report(out: Output) -> str:
    """The thread message: class first, then the evidence and what to do."""
    facts = [
        f"pod {out['pod']} on {out['node'] or '?'}",
        f"restarts {out['restart_count']}",
        f"last state {out['last_state']}" if out["last_state"] else "no terminated state",
        f"memory limit {out['memory_limit_mib']} MiB" if out["memory_limit_mib"] else "",
        f"/dev/shm {out['shm_mib']} MiB",  # noqa: S108 (a size, not a path)
        f"GPU memory peak {out['gpu_memory_peak_mib']:.0f} MiB"
        if out["gpu_memory_peak_mib"] is not None
        else "",
    ]
    lines = [
        f"*Class: {out['class']}* ({out['family']}, {out['confidence']} confidence)",
        " · ".join(f for f in facts if f),
    ]
    sources = out.get("sources") or []
    agreed = [s["source"] for s in sources if s["status"] in ("agrees", "decides")]
    disagreed = [s["source"] for s in sources if s["status"] == "disagrees"]
    if sources:
        lines.append(
            f"sources agreeing: {', '.join(agreed) or 'none'}"
            + (f" · disagreeing: {', '.join(disagreed)}" if disagreed else "")
            + f" · missing: {', '.join(out['sources_missing']) or 'none'}"
        )
    lines += [f"> {line}" for line in out["evidence"][:5]]  # already cut at a word boundary
    lines += [f"• {advice}" for advice in out["advice"]]
    return "\n".join(lines)


async def plan_oom(ctx: ActionContext, p: OomParams) -> PlanNote:
    return PlanNote(
        f"read {p.namespace}/{p.pod}: last state, previous logs ({LOG_LINES} lines), events, "
        f"GPU memory peak over {p.window}; classify and advise",
        changes=False,
    )


async def run_oom(ctx: ActionContext, p: OomParams) -> Output:
    out = await gather_oom(ctx, p)
    await ctx.progress(oom_report(out))
    return out


class XidParams(Params):
    xid: int = Field(ge=0, le=10_000)
    node: str = ""
    gpu: str = ""


async def plan_xid(ctx: ActionContext, p: XidParams) -> PlanNote:
    info = explain(p.xid)
    what = f"{info.name}: {info.action or 'no published action'}" if info else "not in the catalog"
    return PlanNote(f"look up XID {p.xid} in NVIDIA's catalog ({what})", changes=False)


async def run_xid(ctx: ActionContext, p: XidParams) -> Output:
    info = explain(p.xid)
    if info is None:
        return {"xid": p.xid, "known": False, "action": None, "runbook": None}
    return {**info.as_json(), "known": True, "node": p.node, "gpu": p.gpu}


SPECS: tuple[ActionSpec[Any], ...] = (
    ActionSpec(
        Action.TRIAGE_OOM,
        "Gather a pod's OOM evidence (state, logs, events, GPU memory) "
        "and classify it with advice (read-only).",
        OomParams,
        False,
        plan_oom,
        run_oom,
        nothing_to_check,
    ),
    ActionSpec(
        Action.TRIAGE_XID,
        "Explain an XID code from NVIDIA's catalog (read-only).",
        XidParams,
        False,
        plan_xid,
        run_xid,
        nothing_to_check,
    ),
)
