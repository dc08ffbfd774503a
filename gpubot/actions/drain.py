"""node.drain: evict a node's pods the way `kubectl drain` does, respecting PDBs."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field

from gpubot.actions.base import ActionContext, ActionSpec, CheckResult, Output, Params, PlanNote
from gpubot.domain.cluster import PodDisruptionBudget, PodInfo
from gpubot.domain.names import NodeName
from gpubot.errors import (
    DisruptionBlockedError,
    NeedsHumanError,
    PermanentStepError,
    TemporaryStepError,
)
from gpubot.ports import KubeApi

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


class DrainParams(Params):
    node: NodeName
    grace_seconds: int | None = Field(default=None, ge=0, le=3600)
    # Evictions in flight at once: enough to drain a full node in a few API round trips,
    # few enough not to flood the API server.
    concurrency: int = Field(default=25, ge=1, le=100)
    # Off unless a runbook sets it: after this many seconds of the drain, pods a PDB still
    # protects are deleted (kubectl drain --disable-eviction). The budget is overridden on
    # purpose, so it is never a default.
    delete_after_seconds: int | None = Field(default=None, ge=0, le=86_400)


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
    """Evict in rounds until nothing evictable is left; a PDB block waits and retries, with
    backoff, until the step's deadline. A node made schedulable meanwhile pauses the run."""
    kube = ctx.cluster.kube
    evicted: list[str] = []
    deleted: list[str] = []
    skipped: list[str] = []
    delay, first = 1.0, True
    gate = asyncio.Semaphore(p.concurrency)
    while True:
        node = await kube.get_node(node=p.node)
        if not node.unschedulable:
            if first:
                # Draining a schedulable node would let the evicted pods land right back on it.
                raise PermanentStepError(f"{p.node} is not cordoned; cordon it before draining")
            raise NeedsHumanError(
                f"{p.node} was made schedulable by someone during the drain "
                f"({len(evicted)} pod(s) evicted so far); the run is paused: "
                "cordon it again and retry, or close the incident"
            )
        first = False
        pods, skip = evictable(await kube.list_pods(node=p.node))
        skipped = [f"{pod.ref} ({why})" for pod, why in skip]
        if not pods:
            break
        blocked: dict[str, str] = {}
        failed: list[str] = []
        outcomes = await asyncio.gather(*(_evict(kube, pod, p.grace_seconds, gate) for pod in pods))
        for pod, (outcome, detail) in zip(pods, outcomes, strict=True):
            if outcome == "evicted":
                evicted.append(pod.ref)
            elif outcome == "blocked":
                blocked[pod.ref] = detail
            else:
                failed.append(f"{pod.ref}: {detail}")
        if not blocked and not failed:
            await ctx.progress(f"evicted {len(evicted)} pod(s) from {p.node}")
            continue  # list again: confirm nothing is left (or finish what appeared)
        if blocked and _past(ctx, p.delete_after_seconds):
            for ref in blocked:
                namespace, name = ref.split("/", 1)
                await kube.delete_pod(namespace=namespace, name=name, grace_seconds=p.grace_seconds)
                deleted.append(ref)
            await ctx.progress(
                f"deleted {len(blocked)} pod(s) still protected by a PDB after "
                f"{p.delete_after_seconds}s, as the runbook allows: {', '.join(blocked)}"
            )
            continue
        why = _waiting(blocked, failed)
        if ctx.deadline is not None and ctx.clock.now().timestamp() + delay > (
            ctx.deadline.timestamp()
        ):
            raise PermanentStepError(
                f"drain of {p.node} stopped at the step timeout with {len(blocked) + len(failed)} "
                f"pod(s) left: {why}"
            )
        await ctx.progress(
            f"evicted {len(evicted)} pod(s) from {p.node} so far; {why}; retrying in {delay:g}s"
        )
        await ctx.clock.sleep(delay)
        delay = min(delay * 2, 30.0)
    return {"node": p.node, "evicted": evicted, "deleted": deleted, "skipped": skipped}


def _past(ctx: ActionContext, seconds: int | None) -> bool:
    """Whether the drain has run `seconds` since the step first started (durable: a restart
    does not reset it)."""
    if seconds is None:
        return False
    started = ctx.started_at or ctx.clock.now()
    return (ctx.clock.now() - started).total_seconds() >= seconds


async def _evict(
    kube: KubeApi, pod: PodInfo, grace: int | None, gate: asyncio.Semaphore
) -> tuple[str, str]:
    async with gate:
        try:
            await kube.evict(namespace=pod.namespace, name=pod.name, grace_seconds=grace)
        except DisruptionBlockedError as exc:
            return "blocked", exc.budget or "?"
        except TemporaryStepError as exc:  # one flaky call: the next round retries it
            return "failed", str(exc)
    return "evicted", ""


def _waiting(blocked: dict[str, str], failed: list[str]) -> str:
    parts = []
    if blocked:
        budgets = sorted(set(blocked.values()))
        pods = ", ".join(sorted(blocked)[:5]) + (" …" if len(blocked) > 5 else "")
        parts.append(f"{len(blocked)} blocked by PDB {', '.join(budgets)} ({pods})")
    if failed:
        parts.append(f"{len(failed)} failed for now ({failed[0]})")
    return "; ".join(parts)


async def check_drain(ctx: ActionContext, p: DrainParams) -> CheckResult:
    kube = ctx.cluster.kube
    evict, _ = evictable(await kube.list_pods(node=p.node))
    if not evict:
        return CheckResult("done", f"no evictable pods left on {p.node}", {"node": p.node})
    pdbs = await kube.list_pdbs()
    budgets = sorted({b.name for pod in evict if (b := blocking(pod, pdbs))})
    by = f", blocked by PDB {', '.join(budgets)}" if budgets else ""
    return CheckResult(
        "not_done", f"{len(evict)} pod(s) still on {p.node}{by}; draining again is safe"
    )


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
