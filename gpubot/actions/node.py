"""Node steps: cordon, uncordon, taint, untaint, and a read of the node's GPU health."""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import Field

from gpubot.actions.base import (
    ActionContext,
    ActionSpec,
    CheckResult,
    Output,
    Params,
    PlanNote,
    nothing_to_check,
)
from gpubot.domain.fleet.cluster import (
    CORDON_BY_ANNOTATION,
    CORDON_REASON_ANNOTATION,
    NodeInfo,
    Taint,
)
from gpubot.domain.fleet.slurm import is_slurm
from gpubot.domain.k8s_names import NodeName, TaintKey
from gpubot.domain.runbooks.action_names import Action
from gpubot.errors import ConflictError, GpubotError

log = logging.getLogger(__name__)


class NodeParams(Params):
    node: NodeName


class UncordonParams(NodeParams):
    # A check that should have come before the release and did not run (DCGM could not run
    # on the node): the plan, and so the approval request, name it. "": nothing missing.
    unverified: str = Field("", max_length=600)


class TaintParams(Params):
    node: NodeName
    key: TaintKey
    value: str = ""
    # NoExecute would evict pods; eviction belongs to the drain step, with its PDB checks.
    effect: Literal["NoSchedule", "PreferNoSchedule"] = "NoSchedule"

    @property
    def taint(self) -> Taint:
        return Taint(key=self.key, value=self.value, effect=self.effect)


async def _gpu_pods(ctx: ActionContext, node: str) -> tuple[int, int]:
    # For the plan's figures: from a watch cache where there is one, as the node itself is read.
    gpu_pods = await ctx.cluster.pods.gpu_pods(node=node)
    return len(gpu_pods), sum(p.gpu_request for p in gpu_pods)


async def plan_cordon(ctx: ActionContext, p: NodeParams) -> PlanNote:
    node = await ctx.cluster.nodes.get_node(node=p.node, cached=True)  # a plan may lag a little
    if node.unschedulable:
        by = node.annotations.get(CORDON_BY_ANNOTATION, "someone else")
        return PlanNote(f"{p.node} is already cordoned (by {by}); nothing to do", changes=False)
    pods, gpus = await _gpu_pods(ctx, p.node)
    if ctx.probe:
        # Server-side dry-run: RBAC or an admission webhook that would refuse the cordon
        # shows up in the plan (as a problem), not only when the step runs.
        await ctx.cluster.nodes.set_unschedulable(
            node=p.node, value=True, actor=ctx.actor, reason=ctx.reason, dry_run=True
        )
    if is_slurm(node):
        summary = (
            f"drain {p.node} in Slurm (State=DRAIN, the reason naming this run): no new job "
            f"starts there; {pods} running GPU job(s) holding {gpus} GPU(s) keep running"
        )
    else:
        summary = (
            f"cordon {p.node}: no new pods schedule there; {pods} running GPU pod(s) holding "
            f"{gpus} GPU(s) keep running"
        )
    return PlanNote(summary, facts={"gpu_pods": pods, "gpus_in_use": gpus})


async def note(ctx: ActionContext, node: str, reason: str, message: str) -> None:
    """A Node Event for what the bot just did; best effort (the audit trail is the record)."""
    try:
        await ctx.cluster.nodes.post_node_event(
            node=node, reason=reason, message=f"{message} [{ctx.actor}: {ctx.reason}]"
        )
    except GpubotError as exc:
        log.warning("could not post a %s event on %s: %s", reason, node, exc)


async def _cordon_unless_cordoned(ctx: ActionContext, p: NodeParams) -> NodeInfo:
    """Cordon the node unless it is cordoned already; the node as read before (its
    `unschedulable` says which). Read from the watch cache where the cluster keeps one: the
    PATCH carries the version read, so a node that moved meanwhile (someone else cordoned
    it) answers 409 and is read again from the server. A cached "already cordoned" is
    confirmed by the server too (the cache may not have seen an uncordon yet)."""
    k8s = ctx.cluster
    node = await k8s.nodes.get_node(node=p.node, cached=True)
    if node.unschedulable:
        node = await k8s.nodes.get_node(node=p.node)
        if node.unschedulable:
            return node
    try:
        await k8s.nodes.set_unschedulable(
            node=p.node,
            value=True,
            actor=ctx.actor,
            reason=ctx.reason,
            expect_version=node.resource_version,
        )
    except ConflictError:
        node = await k8s.nodes.get_node(node=p.node)
        if node.unschedulable:
            return node
        # Still schedulable: cordon the version just read (another 409 → the step retries).
        await k8s.nodes.set_unschedulable(
            node=p.node,
            value=True,
            actor=ctx.actor,
            reason=ctx.reason,
            expect_version=node.resource_version,
        )
    await note(ctx, p.node, "GpubotCordon", "cordoned by gpubot")
    return node


async def run_cordon(ctx: ActionContext, p: NodeParams) -> Output:
    node = await _cordon_unless_cordoned(ctx, p)
    reason = node.annotations.get(CORDON_REASON_ANNOTATION, "")
    return {
        "node": p.node,
        "was_cordoned": node.unschedulable,
        "cordoned_by": node.annotations.get(CORDON_BY_ANNOTATION, "") if node.unschedulable else "",
        # Cordoned before, and not by gpubot: someone else is working on this node.
        "foreign": node.unschedulable and not reason.startswith("gpubot "),
    }


async def check_cordon(ctx: ActionContext, p: NodeParams) -> CheckResult:
    node = await ctx.cluster.nodes.get_node(node=p.node)
    if node.unschedulable:
        return CheckResult(
            "done",
            f"{p.node} is cordoned",
            {"node": p.node, "was_cordoned": False, "cordoned_by": ctx.actor, "foreign": False},
        )
    return CheckResult("not_done", f"{p.node} is still schedulable")


async def plan_uncordon(ctx: ActionContext, p: UncordonParams) -> PlanNote:
    node = await ctx.cluster.nodes.get_node(node=p.node)
    if not node.unschedulable:
        return PlanNote(f"{p.node} is already schedulable; nothing to do", changes=False)
    slurm = is_slurm(node)
    verb = "resume" if slurm else "uncordon"
    what = "jobs may start" if slurm else "GPU pods may schedule"
    if p.unverified:
        return PlanNote(
            f"{verb} {p.node} WITHOUT a check it should have passed: {p.unverified}. "
            f"Approving releases it on NVML's reading alone: {what} there again"
        )
    if slurm:
        return PlanNote(
            f"resume {p.node} in Slurm (State=RESUME, only while gpubot's drain reason is still "
            "the node's): jobs may start there again"
        )
    return PlanNote(f"uncordon {p.node}: GPU pods may schedule there again")


async def run_uncordon(ctx: ActionContext, p: UncordonParams) -> Output:
    node = await ctx.cluster.nodes.get_node(node=p.node)
    if node.unschedulable:
        await ctx.cluster.nodes.set_unschedulable(
            node=p.node, value=False, actor=ctx.actor, reason=ctx.reason
        )
        await note(ctx, p.node, "GpubotUncordon", "uncordoned by gpubot")
    return {"node": p.node, "was_cordoned": node.unschedulable}


async def check_uncordon(ctx: ActionContext, p: UncordonParams) -> CheckResult:
    node = await ctx.cluster.nodes.get_node(node=p.node)
    if node.unschedulable:
        return CheckResult("not_done", f"{p.node} is still cordoned")
    return CheckResult("done", f"{p.node} is schedulable", {"node": p.node, "was_cordoned": True})


async def plan_taint(ctx: ActionContext, p: TaintParams) -> PlanNote:
    node = await ctx.cluster.nodes.get_node(node=p.node)
    if p.taint in node.taints:
        return PlanNote(f"{p.node} already has taint {p.taint}; nothing to do", changes=False)
    if ctx.probe:  # as for the cordon: a refusal shows in the plan
        await ctx.cluster.nodes.set_taint(node=p.node, taint=p.taint, present=True, dry_run=True)
    if is_slurm(node):
        return PlanNote(
            f"note {p.taint} in gpubot's drain reason on {p.node} (Slurm has no taints)"
        )
    return PlanNote(f"taint {p.node} with {p.taint}: pods without a toleration will not schedule")


async def run_taint(ctx: ActionContext, p: TaintParams) -> Output:
    await ctx.cluster.nodes.set_taint(node=p.node, taint=p.taint, present=True)
    await note(ctx, p.node, "GpubotTaint", f"taint {p.taint} added by gpubot")
    return {"node": p.node, "taint": str(p.taint)}


async def check_taint(ctx: ActionContext, p: TaintParams) -> CheckResult:
    node = await ctx.cluster.nodes.get_node(node=p.node)
    if p.taint in node.taints:
        return CheckResult(
            "done", f"{p.node} has {p.taint}", {"node": p.node, "taint": str(p.taint)}
        )
    return CheckResult("not_done", f"{p.node} does not have {p.taint}")


async def plan_untaint(ctx: ActionContext, p: TaintParams) -> PlanNote:
    node = await ctx.cluster.nodes.get_node(node=p.node)
    if p.taint not in node.taints:
        return PlanNote(f"{p.node} has no taint {p.taint}; nothing to do", changes=False)
    if is_slurm(node):
        return PlanNote(f"remove {p.taint} from gpubot's drain reason on {p.node}")
    return PlanNote(f"remove taint {p.taint} from {p.node}")


async def run_untaint(ctx: ActionContext, p: TaintParams) -> Output:
    await ctx.cluster.nodes.set_taint(node=p.node, taint=p.taint, present=False)
    await note(ctx, p.node, "GpubotUntaint", f"taint {p.taint} removed by gpubot")
    return {"node": p.node, "taint": str(p.taint)}


async def check_untaint(ctx: ActionContext, p: TaintParams) -> CheckResult:
    node = await ctx.cluster.nodes.get_node(node=p.node)
    if p.taint in node.taints:
        return CheckResult("not_done", f"{p.node} still has {p.taint}")
    return CheckResult("done", f"{p.node} no longer has {p.taint}", {"node": p.node})


async def _gpu_health(ctx: ActionContext, p: NodeParams) -> Output:
    gpus = await ctx.cluster.agent.gpus(node=p.node)
    lost = [g.index for g in gpus if g.lost]
    xid = {str(g.index): list(g.xid_errors) for g in gpus if g.xid_errors}
    unhealthy = [g.index for g in gpus if not g.healthy]
    return {
        "node": p.node,
        "gpus": len(gpus),
        "lost_gpus": lost,
        "xid_errors": xid,
        "unhealthy": len(unhealthy),
        "healthy": not unhealthy,
    }


async def plan_gpu_health(ctx: ActionContext, p: NodeParams) -> PlanNote:
    out = await _gpu_health(ctx, p)
    xids = "; ".join(
        f"GPU {gpu}: XID {', '.join(str(c) for c in codes)}"
        for gpu, codes in out["xid_errors"].items()
    )
    state = "all healthy" if out["healthy"] else f"{out['unhealthy']} unhealthy ({xids})"
    return PlanNote(f"read GPU health on {p.node} (now: {out['gpus']} GPUs, {state})", False, out)


async def run_gpu_health(ctx: ActionContext, p: NodeParams) -> Output:
    return await _gpu_health(ctx, p)


async def _status(ctx: ActionContext, p: NodeParams) -> Output:
    node = await ctx.cluster.nodes.get_node(node=p.node)
    reason = node.annotations.get(CORDON_REASON_ANNOTATION, "")
    return {
        "node": p.node,
        "unschedulable": node.unschedulable,
        "ready": node.ready,
        "cordoned_by": node.annotations.get(CORDON_BY_ANNOTATION, "") if node.unschedulable else "",
        "cordon_reason": reason if node.unschedulable else "",
        # Cordoned, and not by gpubot: a human (or another tool) is working on this node.
        "foreign": node.unschedulable and not reason.startswith("gpubot "),
    }


async def plan_status(ctx: ActionContext, p: NodeParams) -> PlanNote:
    out = await _status(ctx, p)
    if out["foreign"]:
        state = f"cordoned by {out['cordoned_by'] or 'someone else'}, not by gpubot"
    else:
        state = "cordoned by gpubot" if out["unschedulable"] else "schedulable"
    return PlanNote(f"read {p.node}'s state (now: {state})", False, out)


async def run_status(ctx: ActionContext, p: NodeParams) -> Output:
    return await _status(ctx, p)


SPECS: tuple[ActionSpec[Any], ...] = (
    ActionSpec(
        Action.NODE_STATUS,
        "Read whether the node is cordoned, and by whom (read-only).",
        NodeParams,
        False,
        plan_status,
        run_status,
        nothing_to_check,
    ),
    ActionSpec(
        Action.NODE_CORDON,
        "Mark the node unschedulable (records who and why); on Slurm, DRAIN with gpubot's reason. "
        "A Node Event (GpubotCordon) says so in `kubectl describe node`, queued and posted "
        "after the step, off its path.",
        NodeParams,
        True,
        plan_cordon,
        run_cordon,
        check_cordon,
        blast="cordon",
    ),
    ActionSpec(
        Action.NODE_UNCORDON,
        "Make the node schedulable again (on Slurm, RESUME, only of gpubot's own drain); "
        "`unverified` names a check that should have come first and did not run, so the plan "
        "and the approval request say so.",
        UncordonParams,
        True,
        plan_uncordon,
        run_uncordon,
        check_uncordon,
        auto_allowed=False,
    ),
    ActionSpec(
        Action.NODE_TAINT,
        "Add a NoSchedule/PreferNoSchedule taint.",
        TaintParams,
        True,
        plan_taint,
        run_taint,
        check_taint,
    ),
    ActionSpec(
        Action.NODE_UNTAINT,
        "Remove a taint.",
        TaintParams,
        True,
        plan_untaint,
        run_untaint,
        check_untaint,
        auto_allowed=False,
    ),
    ActionSpec(
        Action.NODE_GPU_HEALTH,
        "Read the node's GPUs: lost GPUs and XID errors (read-only).",
        NodeParams,
        False,
        plan_gpu_health,
        run_gpu_health,
        nothing_to_check,
    ),
)
