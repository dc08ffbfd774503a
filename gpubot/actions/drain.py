"""node.drain: evict a node's pods the way `kubectl drain` does, respecting PDBs."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gpubot.actions.base import ActionContext, ActionSpec, CheckResult, Output, Params, PlanNote
from gpubot.domain.cluster import PodDisruptionBudget, PodInfo
from gpubot.domain.names import NodeName
from gpubot.errors import DisruptionBlockedError, PermanentStepError, TemporaryStepError

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


class DrainParams(Params):
    node: NodeName
    grace_seconds: int | None = Field(default=None, ge=0, le=3600)


def evictable(pods: list[PodInfo]) -> tuple[list[PodInfo], list[tuple[PodInfo, str]]]:
    """kubectl's rules: DaemonSet pods and static (mirror) pods stay; finished pods are ignored."""
    evict, skipped = [], []
    for pod in pods:
        if pod.phase in ("Succeeded", "Failed"):
            continue
        if pod.is_daemonset:
            skipped.append((pod, "DaemonSet-managed"))
        elif MIRROR_ANNOTATION in pod.annotations:
            skipped.append((pod, "static (mirror) pod"))
        else:
            evict.append(pod)
    return evict, skipped


def blocking(pod: PodInfo, pdbs: list[PodDisruptionBudget]) -> PodDisruptionBudget | None:
    for pdb in pdbs:
        if (
            pdb.namespace == pod.namespace
            and pdb.selector
            and all(pod.labels.get(k) == v for k, v in pdb.selector.items())
            and pdb.disruptions_allowed < 1
        ):
            return pdb
    return None


async def plan_drain(ctx: ActionContext, p: DrainParams) -> PlanNote:
    kube = ctx.cluster.kube
    evict, skipped = evictable(await kube.list_pods(node=p.node))
    pdbs = await kube.list_pdbs()
    blocked = {pod.ref: b.name for pod in evict if (b := blocking(pod, pdbs))}
    names = ", ".join(pod.ref for pod in evict[:10]) + (" …" if len(evict) > 10 else "")
    summary = f"evict {len(evict)} pod(s) from {p.node}: {names or 'none'}"
    if skipped:
        summary += f"; skip {len(skipped)} ({', '.join(sorted({why for _, why in skipped}))})"
    if blocked:
        summary += "; blocked now by PDB " + ", ".join(f"{pod} ({b})" for pod, b in blocked.items())
    return PlanNote(
        summary, changes=bool(evict), facts={"evict": [x.ref for x in evict], "blocked": blocked}
    )


async def run_drain(ctx: ActionContext, p: DrainParams) -> Output:
    kube = ctx.cluster.kube
    node = await kube.get_node(node=p.node)
    if not node.unschedulable:
        # Draining a schedulable node would let the evicted pods land right back on it.
        raise PermanentStepError(f"{p.node} is not cordoned; cordon it before draining")
    evict, _ = evictable(await kube.list_pods(node=p.node))
    blocked: list[str] = []
    evicted: list[str] = []
    for pod in evict:
        try:
            await kube.evict(namespace=pod.namespace, name=pod.name, grace_seconds=p.grace_seconds)
            evicted.append(pod.ref)
        except DisruptionBlockedError as exc:
            blocked.append(f"{pod.ref} (PDB {exc.budget or '?'})")
    if evicted:
        await ctx.progress(f"evicted {len(evicted)} pod(s) from {p.node}")
    if blocked:
        raise TemporaryStepError(f"blocked by PDB: {', '.join(blocked)}", delay=10.0)
    return {"node": p.node, "evicted": evicted}


async def check_drain(ctx: ActionContext, p: DrainParams) -> CheckResult:
    evict, _ = evictable(await ctx.cluster.kube.list_pods(node=p.node))
    if not evict:
        return CheckResult("done", f"no evictable pods left on {p.node}", {"node": p.node})
    return CheckResult("not_done", f"{len(evict)} pod(s) still on {p.node}; draining again is safe")


SPECS: tuple[ActionSpec[Any], ...] = (
    ActionSpec(
        "node.drain",
        "Evict the node's pods (DaemonSet and mirror pods stay; PDBs respected).",
        DrainParams,
        True,
        plan_drain,
        run_drain,
        check_drain,
        auto_allowed=False,
        blast="drain",
    ),
)
