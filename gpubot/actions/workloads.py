"""workload.reclaim: scale an idle pod's workload to zero (or delete a bare pod), undoably."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field, field_validator

from gpubot.actions.base import ActionContext, ActionSpec, CheckResult, Output, Params, PlanNote
from gpubot.domain.fleet.cluster import PodInfo
from gpubot.domain.fleet.reclaim import OBJECTION_KIND, ReclaimPolicy, refusal
from gpubot.domain.fleet.workloads import (
    RECLAIMED_BY_ANNOTATION,
    RECLAIMED_FROM_ANNOTATION,
    Workload,
)
from gpubot.domain.k8s_names import Namespace, PodName
from gpubot.domain.runbooks.action_names import Action
from gpubot.errors import GpubotError, NotFoundError, PermanentStepError, StopRunError

RECLAIM_ACTION = Action.WORKLOAD_RECLAIM  # the idle report sums this action's audit entries


class TargetParams(Params):
    """The idle pod, as the alert (labels namespace, pod) or the command names it."""

    namespace: Namespace
    pod: PodName
    gpu_model: str = Field("", max_length=120)  # the alert's modelName; else the node's label
    idle_hours: float = Field(0.0, ge=0, le=24 * 366)

    @field_validator("idle_hours", mode="before")
    @classmethod
    def _unknown_is_zero(cls, value: Any) -> Any:
        return 0.0 if value in ("", None, "None") else value


class ReclaimParams(TargetParams):
    # What the guard found runs the pod: check() needs it once the pod itself is gone.
    kind: str = Field("", pattern=r"^[A-Za-z]{0,63}$")
    name: str = Field("", max_length=253, pattern=r"^[a-z0-9.-]*$")
    gpus: int = Field(0, ge=0, le=100_000)  # GPUs the guard counted, for check()'s output
    grace_seconds: int = Field(30, ge=0, le=3600)  # a bare pod's termination grace

    @field_validator("gpus", mode="before")
    @classmethod
    def _unknown_gpus(cls, value: Any) -> Any:
        return 0 if value in ("", None, "None") else value


@dataclass(frozen=True)
class Assessment:
    """The pod, what runs it, and whether gpubot may take its GPUs."""

    pod: PodInfo
    workload: Workload
    gpu_model: str
    refused: str | None  # why it must be left alone, in one line

    @property
    def gpus(self) -> int:
        return self.workload.gpus if self.workload.scalable else self.pod.gpu_request


async def assess(ctx: ActionContext, policy: ReclaimPolicy, p: TargetParams) -> Assessment:
    """Live facts for one idle pod; StopRunError when there is nothing left to reclaim."""
    k8s = ctx.cluster
    try:
        pod = await k8s.pods.get_pod(namespace=p.namespace, name=p.pod)
        workload = await k8s.workloads.get_workload_owner(namespace=p.namespace, pod=p.pod)
    except NotFoundError as exc:
        raise StopRunError(f"{p.namespace}/{p.pod} is gone; nothing to reclaim") from exc
    refused = refusal(policy, pod, now=ctx.clock.now())
    if refused is None and not (workload.scalable or workload.bare_pod):
        refused = (
            f"{pod.ref} belongs to {workload.ref}; gpubot scales Deployments and "
            f"StatefulSets and deletes bare pods, never a {workload.kind}: a human must decide"
        )
    return Assessment(pod, workload, await gpu_model(ctx, p.gpu_model, pod.node), refused)


async def gpu_model(ctx: ActionContext, given: str, node: str) -> str:
    if given or not node:
        return given
    try:
        return (await ctx.cluster.nodes.get_node(node=node)).gpu_product
    except GpubotError:  # the model only labels the report; never a reason to stop
        return ""


async def objection(ctx: ActionContext) -> str | None:
    """The Slack user who objected during this run's grace period, if anyone did."""
    found = await ctx.events(OBJECTION_KIND)
    return found[0].actor if found else None


def _output(
    ctx: ActionContext,
    p: ReclaimParams,
    workload: Workload,
    *,
    gpus: int,
    model: str,
    was: int | None,
) -> Output:
    """The contract the idle report reads back from the audit trail (step.finished result)."""
    return {
        "gpus_released": gpus,
        "gpu_model": model,
        "namespace": p.namespace,
        "workload": workload.ref,
        "idle_hours": p.idle_hours,
        "reclaimed_at": ctx.clock.now().isoformat(),
        "pod": p.pod,
        "previous_replicas": was,
        "restore": workload.restore_hint(was),
    }


class Reclaim:
    """plan/run/check of workload.reclaim under the operator's reclamation policy."""

    def __init__(self, policy: ReclaimPolicy) -> None:
        self.policy = policy

    async def _target(self, ctx: ActionContext, p: ReclaimParams) -> Workload:
        k8s = ctx.cluster
        try:
            if p.kind and p.name:
                return await k8s.workloads.get_workload(
                    namespace=p.namespace, kind=p.kind, name=p.name
                )
            return await k8s.workloads.get_workload_owner(namespace=p.namespace, pod=p.pod)
        except NotFoundError as exc:
            what = f"{p.kind}/{p.name}" if p.kind and p.name else f"pod {p.pod}"
            raise StopRunError(f"{what} in {p.namespace} is gone; nothing to reclaim") from exc

    async def plan(self, ctx: ActionContext, p: ReclaimParams) -> PlanNote:
        w = await self._target(ctx, p)
        if w.scalable:
            if not w.replicas:
                return PlanNote(f"{w.ref} in {p.namespace} is already at 0 replicas", changes=False)
            # Server-side dry run: RBAC or admission refusing the scale shows in the plan.
            await ctx.cluster.workloads.scale_workload(
                namespace=p.namespace, kind=w.kind, name=w.name, replicas=0, dry_run=True
            )
            return PlanNote(
                f"scale {w.ref} in {p.namespace} from {w.replicas} to 0 replicas, releasing "
                f"{w.gpus} GPU(s); {RECLAIMED_FROM_ANNOTATION}={w.replicas} records the way back"
            )
        if w.bare_pod:
            return PlanNote(f"delete the bare pod {p.namespace}/{p.pod}, releasing {p.gpus} GPU(s)")
        return PlanNote(f"refuse: {p.namespace}/{p.pod} belongs to {w.ref}", changes=False)

    async def run(self, ctx: ActionContext, p: ReclaimParams) -> Output:
        if (user := await objection(ctx)) is not None:
            raise StopRunError(f"kept by <@{user}>: the owner objected; nothing reclaimed")
        w = await self._target(ctx, p)
        pod = await self._pod(ctx, p)
        if pod is not None and (why := refusal(self.policy, pod, now=ctx.clock.now())):
            await ctx.progress(f"Not reclaiming: {why}. Nothing was changed.")
            raise StopRunError(f"not reclaimed: {why}")
        model = await gpu_model(ctx, p.gpu_model, pod.node if pod else "")
        k8s = ctx.cluster
        if w.scalable:
            if not w.replicas:
                if w.recorded_replicas is not None:  # ours, from an attempt that timed out
                    return _output(ctx, p, w, gpus=p.gpus, model=model, was=w.recorded_replicas)
                raise StopRunError(f"{w.ref} in {p.namespace} is already at 0 replicas")
            notes = {
                RECLAIMED_FROM_ANNOTATION: str(w.replicas),
                RECLAIMED_BY_ANNOTATION: f"{ctx.actor}: {ctx.reason}"[:250],
            }
            was = await k8s.workloads.scale_workload(
                namespace=p.namespace, kind=w.kind, name=w.name, replicas=0, annotations=notes
            )
            await ctx.progress(f"Scaled {w.ref} in {p.namespace} from {was} to 0 replicas.")
            return _output(ctx, p, w, gpus=w.gpus, model=model, was=was)
        if w.bare_pod:
            if pod is None:
                raise StopRunError(f"{p.namespace}/{p.pod} is already gone; nothing to reclaim")
            await k8s.evictions.delete_pod(
                namespace=p.namespace, name=p.pod, grace_seconds=p.grace_seconds
            )
            return _output(ctx, p, w, gpus=pod.gpu_request, model=model, was=None)
        raise PermanentStepError(
            f"{p.namespace}/{p.pod} belongs to {w.ref}: gpubot never scales or deletes a "
            f"{w.kind}; a human must decide"
        )

    async def _pod(self, ctx: ActionContext, p: ReclaimParams) -> PodInfo | None:
        try:
            return await ctx.cluster.pods.get_pod(namespace=p.namespace, name=p.pod)
        except NotFoundError:
            return None  # a Deployment's pod may have been replaced meanwhile

    async def check(self, ctx: ActionContext, p: ReclaimParams) -> CheckResult:
        """After a crash: at 0 replicas, or the bare pod gone, the reclamation took effect."""
        if not (p.kind and p.name):
            return CheckResult("unknown", "the step does not say which workload it acted on")
        k8s = ctx.cluster
        try:
            w = await k8s.workloads.get_workload(namespace=p.namespace, kind=p.kind, name=p.name)
        except NotFoundError:
            w = Workload(p.namespace, p.kind, p.name, replicas=0)
        ref = f"{p.kind}/{p.name} in {p.namespace}"
        if w.scalable or w.bare_pod:
            if (w.scalable and w.replicas == 0) or (w.bare_pod and w.pods == 0):
                was = w.recorded_replicas
                out = _output(ctx, p, w, gpus=p.gpus, model=p.gpu_model, was=was)
                return CheckResult("done", f"{ref} is down to zero", out)
            return CheckResult("not_done", f"{ref} still runs ({w.replicas or w.pods})")
        return CheckResult("not_done", f"{ref} is not a kind gpubot reclaims")


def specs(policy: ReclaimPolicy) -> tuple[ActionSpec[Any], ...]:
    steps = Reclaim(policy)
    return (
        ActionSpec(
            RECLAIM_ACTION,
            "Scale an idle pod's Deployment/StatefulSet to zero (recording the replicas on it) "
            "or delete a bare pod; never a Job.",
            ReclaimParams,
            True,
            steps.plan,
            steps.run,
            steps.check,
            auto_allowed=False,
        ),
    )
