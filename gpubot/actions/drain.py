"""node.drain: evict a node's pods the way `kubectl drain` does, respecting PDBs."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from pydantic import Field

from gpubot.actions.base import ActionContext, ActionSpec, CheckResult, Output, Params, PlanNote
from gpubot.domain.fleet.cluster import PodDisruptionBudget, PodInfo
from gpubot.domain.fleet.slurm import drain_plan, is_job
from gpubot.domain.k8s_names import NodeName
from gpubot.domain.runbooks.action_names import Action
from gpubot.errors import (
    DisruptionBlockedError,
    NeedsHumanError,
    PermanentStepError,
    TemporaryStepError,
)
from gpubot.ports import Evictions

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
    # An evicted pod stays listed, terminating, until its kubelet confirms it stopped. This
    # long past its deletion's grace period the kubelet is probably gone (a node hung after
    # XID 79) and waiting longer does not help: the run is handed to a human, or with
    # force_delete_terminating the pods are deleted with grace period 0 (kubectl delete
    # --grace-period=0 --force).
    terminating_timeout_seconds: int = Field(default=300, ge=0, le=86_400)
    force_delete_terminating: bool = False
    # The wait between looks at a node whose pods are terminating or blocked: 1 s, doubling
    # up to this, so a stuck drain lists the node's pods a few times a minute at most.
    max_poll_seconds: float = Field(default=30.0, ge=1.0, le=300.0)


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
    k8s = ctx.cluster
    listed, skipped = evictable(await k8s.pods.list_pods(node=p.node))
    evict = [pod for pod in listed if not pod.terminating]
    terminating = [pod.ref for pod in listed if pod.terminating]
    if listed and all(is_job(pod) for pod in listed):
        # Slurm: each job as an admin reads it (id, user, account, partition, GPUs, elapsed).
        return PlanNote(
            drain_plan(p.node, listed, now=ctx.clock.now()),
            facts={"evict": [x.ref for x in listed], "blocked": {}, "terminating": terminating},
        )
    pdbs = await k8s.pods.list_pdbs()
    blocked = {pod.ref: b.name for pod in evict if (b := blocking(pod, pdbs))}
    names = ", ".join(pod.ref for pod in evict[:10]) + (" …" if len(evict) > 10 else "")
    summary = f"evict {len(evict)} pod(s) from {p.node}: {names or 'none'}"
    if terminating:
        summary += f"; wait for {len(terminating)} already terminating ({_few(terminating)})"
    if skipped:
        summary += f"; skip {len(skipped)} ({', '.join(sorted({why for _, why in skipped}))})"
    if blocked:
        summary += "; blocked now by PDB " + ", ".join(f"{pod} ({b})" for pod, b in blocked.items())
    return PlanNote(
        summary,
        changes=bool(listed),
        facts={"evict": [x.ref for x in evict], "blocked": blocked, "terminating": terminating},
    )


async def run_drain(ctx: ActionContext, p: DrainParams) -> Output:
    """Evict each pod once, then wait for the evicted pods to finish terminating, looking
    again with backoff (1 s doubling to `max_poll_seconds`). A PDB block is retried on the
    same backoff until the step's deadline; pods terminating past `terminating_timeout_seconds`
    are force-deleted if the runbook allows it, else the run is handed to a human. A node
    made schedulable meanwhile pauses the run."""
    k8s = ctx.cluster
    # Ordered sets: a pod is counted once however many times the node is listed.
    evicted: dict[str, None] = {}
    deleted: dict[str, None] = {}
    skipped: list[str] = []
    terminating_since: dict[str, datetime] = {}
    delay, first, said, left_before = 1.0, True, "", -1
    gate = asyncio.Semaphore(p.concurrency)
    while True:
        node = await k8s.nodes.get_node(node=p.node)
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
        pods, skip = evictable(await k8s.pods.list_pods(node=p.node))
        skipped = [f"{pod.ref} ({why})" for pod, why in skip]
        now = ctx.clock.now()
        if not pods and not node.draining:
            break
        if not pods:
            # Slurm: no job listed, but the node is DRAINING, not DRAINED (an epilog, a job
            # still completing): a GPU reset must wait for DRAINED.
            if ctx.deadline is not None and now.timestamp() + delay > ctx.deadline.timestamp():
                raise PermanentStepError(
                    f"drain of {p.node} stopped at the step timeout: the scheduler still "
                    "reports it draining, not drained"
                )
            text = f"no jobs left on {p.node}; waiting for the scheduler to report it drained"
            if text != said:
                await ctx.progress(text)
                said = text
            await ctx.clock.sleep(delay)
            delay = min(delay * 2, p.max_poll_seconds)
            continue
        # Evicted (or deleted) already: waited for, never evicted again, even before the
        # list shows its deletionTimestamp.
        handled = evicted.keys() | deleted.keys()
        live = [x for x in pods if not x.terminating and x.ref not in handled]
        live_refs = {x.ref for x in live}
        terminating_since = {
            x.ref: terminating_since.get(x.ref, now) for x in pods if x.ref not in live_refs
        }
        blocked: dict[str, str] = {}
        failed: list[str] = []
        outcomes = await asyncio.gather(
            *(_evict(k8s.evictions, pod, p.grace_seconds, gate) for pod in live)
        )
        for pod, (outcome, detail) in zip(live, outcomes, strict=True):
            if outcome == "evicted":
                evicted[pod.ref] = None
            elif outcome == "blocked":
                blocked[pod.ref] = detail
            else:
                failed.append(f"{pod.ref}: {detail}")
        if any(outcome == "evicted" for outcome, _ in outcomes) and not blocked and not failed:
            # List once more at once: pods that went quickly let the drain end now.
            await ctx.progress(f"evicted {len(evicted)} pod(s) from {p.node}")
            said = ""
            continue
        if blocked and _past(ctx, p.delete_after_seconds):
            for ref in blocked:
                namespace, name = ref.split("/", 1)
                await k8s.evictions.delete_pod(
                    namespace=namespace, name=name, grace_seconds=p.grace_seconds
                )
                deleted[ref] = None
            await ctx.progress(
                f"deleted {len(blocked)} pod(s) still protected by a PDB after "
                f"{p.delete_after_seconds}s, as the runbook allows: {', '.join(blocked)}"
            )
            continue
        waiting = sorted(set(terminating_since) - set(blocked))
        # Counted from when this drain first saw the pod terminating, plus the deletion's own
        # grace period: a pod given 10 minutes to checkpoint is not stuck at 5.
        grace = {x.ref: x.deletion_grace_seconds or 0 for x in pods}
        stuck = [
            ref
            for ref in waiting
            if (now - terminating_since[ref]).total_seconds()
            >= p.terminating_timeout_seconds + grace.get(ref, 0)
        ]
        if stuck and p.force_delete_terminating:
            for ref in stuck:
                namespace, name = ref.split("/", 1)
                await k8s.evictions.delete_pod(namespace=namespace, name=name, grace_seconds=0)
                deleted[ref] = None
            await ctx.progress(
                f"force-deleted {len(stuck)} pod(s) still terminating on {p.node} after "
                f"{_span(p.terminating_timeout_seconds)} (grace period 0, as the runbook "
                f"allows): {_few(stuck)}"
            )
            terminating_since = {}  # deleted with grace 0: they go at once
            continue
        if stuck:
            raise NeedsHumanError(_stuck(p.node, stuck, p.terminating_timeout_seconds))
        if len(pods) < left_before:
            delay = 1.0  # something finished: things are moving, look again soon
        left_before = len(pods)
        why = _waiting(blocked, failed, waiting)
        if ctx.deadline is not None and now.timestamp() + delay > ctx.deadline.timestamp():
            if waiting and not blocked and not failed:
                oldest = max((now - terminating_since[r]).total_seconds() for r in waiting)
                raise NeedsHumanError(_stuck(p.node, waiting, oldest, at_timeout=True))
            raise PermanentStepError(
                f"drain of {p.node} stopped at the step timeout with {len(pods)} pod(s) left: {why}"
            )
        # Said once per change, not per look: a stuck drain must not flood the thread.
        text = f"evicted {len(evicted)} pod(s) from {p.node} so far; {why}"
        if text != said:
            await ctx.progress(
                f"{text}; looking again with backoff (up to {p.max_poll_seconds:g}s)"
            )
            said = text
        await ctx.clock.sleep(delay)
        delay = min(delay * 2, p.max_poll_seconds)
    return {
        "node": p.node,
        "evicted": list(evicted),
        "deleted": list(deleted),
        "skipped": skipped,
    }


def _span(seconds: float) -> str:
    return f"{seconds / 60:g}m" if seconds >= 60 else f"{seconds:g}s"


def _few(refs: list[str]) -> str:
    return ", ".join(refs[:5]) + (f" and {len(refs) - 5} more" if len(refs) > 5 else "")


def _stuck(node: str, refs: list[str], seconds: float, *, at_timeout: bool = False) -> str:
    when = (
        f"at the step timeout, after {_span(round(seconds))}"
        if at_timeout
        else f"after {_span(seconds)} beyond their grace period"
    )
    return (
        f"{len(refs)} pod(s) still terminating {when}: the kubelet on {node} may be gone, "
        f"so they were not evicted again ({_few(refs)}). The run is paused for a human: check "
        f"the node (kubectl get node {node}); if it is down, force-delete them "
        "(kubectl delete pod --grace-period=0 --force) or let the runbook do it "
        "(force_delete_terminating: true), then run the drain again"
    )


def _past(ctx: ActionContext, seconds: int | None) -> bool:
    """Whether the drain has run `seconds` since the step first started (durable: a restart
    does not reset it)."""
    if seconds is None:
        return False
    started = ctx.started_at or ctx.clock.now()
    return (ctx.clock.now() - started).total_seconds() >= seconds


async def _evict(
    evictions: Evictions, pod: PodInfo, grace: int | None, gate: asyncio.Semaphore
) -> tuple[str, str]:
    async with gate:
        try:
            await evictions.evict(namespace=pod.namespace, name=pod.name, grace_seconds=grace)
        except DisruptionBlockedError as exc:
            return "blocked", exc.budget or "?"
        except TemporaryStepError as exc:  # one flaky call: the next round retries it
            return "failed", str(exc)
    return "evicted", ""


def _waiting(blocked: dict[str, str], failed: list[str], terminating: list[str]) -> str:
    parts = []
    if terminating:
        parts.append(f"{len(terminating)} terminating ({_few(terminating)})")
    if blocked:
        budgets = sorted(set(blocked.values()))
        pods = ", ".join(sorted(blocked)[:5]) + (" …" if len(blocked) > 5 else "")
        parts.append(f"{len(blocked)} blocked by PDB {', '.join(budgets)} ({pods})")
    if failed:
        parts.append(f"{len(failed)} failed for now ({failed[0]})")
    return "; ".join(parts)


async def check_drain(ctx: ActionContext, p: DrainParams) -> CheckResult:
    k8s = ctx.cluster
    evict, _ = evictable(await k8s.pods.list_pods(node=p.node))
    if not evict and (await k8s.nodes.get_node(node=p.node)).draining:
        return CheckResult(
            "not_done",
            f"no jobs left on {p.node}, but it is draining, not drained; waiting is safe",
        )
    if not evict:
        return CheckResult("done", f"no evictable pods left on {p.node}", {"node": p.node})
    pdbs = await k8s.pods.list_pdbs()
    budgets = sorted({b.name for pod in evict if (b := blocking(pod, pdbs))})
    by = f", blocked by PDB {', '.join(budgets)}" if budgets else ""
    if terminating := sum(1 for pod in evict if pod.terminating):
        by += f", {terminating} of them terminating"
    return CheckResult(
        "not_done", f"{len(evict)} pod(s) still on {p.node}{by}; draining again is safe"
    )


SPECS: tuple[ActionSpec[Any], ...] = (
    ActionSpec(
        Action.NODE_DRAIN,
        "Evict the node's pods (DaemonSet and mirror pods stay; PDBs respected); on Slurm, "
        "requeue or cancel each job on the node and wait for DRAINED.",
        DrainParams,
        True,
        plan_drain,
        run_drain,
        check_drain,
        auto_allowed=False,
        blast="drain",
    ),
)
