"""Before a reclamation: the guard, the owner's notice with its Object button, the grace period."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import field_validator

from gpubot.actions.base import (
    ActionContext,
    ActionSpec,
    CheckResult,
    Output,
    PlanNote,
    nothing_to_check,
)
from gpubot.actions.workloads import Assessment, TargetParams, assess, objection
from gpubot.domain.fleet.reclaim import Owner, ReclaimPolicy, owner_of
from gpubot.domain.results import Button, Fields, Message, Text
from gpubot.domain.runbooks.action_names import Action
from gpubot.domain.runbooks.durations import parse_duration
from gpubot.errors import StopRunError

MAX_GRACE_SECONDS = 24 * 3600.0  # the runbook's grace step times out at 25 h


class GraceParams(TargetParams):
    grace: float | None = None  # None: reclaim.grace from the config

    @field_validator("grace", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> float | None:
        if value in ("", None, "None"):
            return None
        seconds = parse_duration(value)
        if not 0 <= seconds <= MAX_GRACE_SECONDS:
            raise ValueError(f"grace must be between 0 and {MAX_GRACE_SECONDS:g}s")
        return seconds


def _at(ctx: ActionContext, seconds: float) -> str:
    return (ctx.clock.now() + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M UTC")


def _facts(a: Assessment) -> dict[str, Any]:
    return {
        "allowed": a.refused is None,
        "reason": a.refused or "",
        "kind": a.workload.kind,
        "name": a.workload.name,
        "workload": a.workload.ref,
        "replicas": a.workload.replicas,
        "gpus": a.gpus,
        "gpu_model": a.gpu_model,
        "node": a.pod.node,
    }


class Notice:
    """The guard, the owner's notice and the grace period, under one reclamation policy."""

    def __init__(self, policy: ReclaimPolicy) -> None:
        self.policy = policy

    def grace(self, p: GraceParams) -> float:
        return p.grace if p.grace is not None else self.policy.grace.total_seconds()

    # -- guard ----------------------------------------------------------------------------

    async def plan_guard(self, ctx: ActionContext, p: TargetParams) -> PlanNote:
        try:
            a = await assess(ctx, self.policy, p)
        except StopRunError as exc:
            return PlanNote(f"stop: {exc}", changes=False, facts={"allowed": False})
        if a.refused:
            return PlanNote(f"leave it alone: {a.refused}", changes=False, facts=_facts(a))
        return PlanNote(
            f"{a.pod.ref} may be reclaimed: {a.workload.ref} holds {a.gpus} GPU(s); not opted "
            "out, not a system namespace, old enough",
            changes=False,
            facts=_facts(a),
        )

    async def run_guard(self, ctx: ActionContext, p: TargetParams) -> Output:
        a = await assess(ctx, self.policy, p)
        if a.refused:
            await ctx.progress(f"Not reclaiming: {a.refused}. Nothing was changed.")
            raise StopRunError(f"not reclaimed: {a.refused}")
        return _facts(a)

    # -- the owner's notice ---------------------------------------------------------------

    async def plan_notify(self, ctx: ActionContext, p: GraceParams) -> PlanNote:
        a = await assess(ctx, self.policy, p)
        owner = owner_of(self.policy, a.pod)
        who = owner.mention or "nobody (no owner configured)"
        return PlanNote(
            f"tell {who} that {a.workload.ref} ({a.gpus} idle GPU(s)) will be reclaimed after "
            f"the grace period, with an Object button",
            changes=False,
            facts=_owner_facts(owner, ""),
        )

    async def run_notify(self, ctx: ActionContext, p: GraceParams) -> Output:
        a = await assess(ctx, self.policy, p)
        owner = owner_of(self.policy, a.pod)
        ends = _at(ctx, self.grace(p))
        message = self._notice(ctx, p, a, owner, ends)
        if ctx.post is not None:
            await ctx.post(message)
        else:
            await ctx.progress(message.plain())
        return {**_owner_facts(owner, ends), "workload": a.workload.ref, "gpus": a.gpus}

    def _notice(
        self, ctx: ActionContext, p: GraceParams, a: Assessment, owner: Owner, ends: str
    ) -> Message:
        who = owner.mention or f"Nobody owns namespace {p.namespace} (set reclaim.owners)"
        idle = f" for about {p.idle_hours:.1f} h" if p.idle_hours else ""
        model = a.gpu_model or "GPU"
        pairs = [
            ("Workload", f"{p.namespace}/{a.workload.ref}"),
            ("Pod", f"{a.pod.name} on {a.pod.node or '-'}"),
            ("GPUs", f"{a.gpus} x {model}"),
            ("Idle", f"{p.idle_hours:.1f} h" if p.idle_hours else "unknown"),
            ("Grace period ends", ends),
        ]
        if (price := self.policy.price(a.gpu_model)) is not None:
            cost = f"${a.gpus * price:,.2f} per hour"
            if p.idle_hours:
                cost += f" (${a.gpus * price * p.idle_hours:,.0f} while idle so far)"
            pairs.append(("Cost", cost))
        what = (
            f"scaled to 0 replicas (from {a.workload.replicas})"
            if a.workload.scalable
            else "deleted (a bare pod)"
        )
        blocks: list[Any] = [
            Text(
                f"{who}: {a.workload.ref} in {p.namespace} holds {a.gpus} x {model} that "
                f"{'has' if a.gpus == 1 else 'have'} been idle{idle}. Unless someone objects "
                f"by {ends}, it will be {what} once an approver agrees."
            ),
            Fields(tuple(pairs)),
            Text(
                "To keep it, press the button (the owner or an approver). To keep a pod out "
                f"of reclamation for good, label or annotate it {self.policy.opt_out_key}=false."
            ),
        ]
        if ctx.run_id is not None:
            blocks.append(Button("Object — keep it", action="object", value=ctx.run_id))
        return Message(
            f"Idle GPUs: {a.workload.ref} in {p.namespace} will be reclaimed",
            tuple(blocks),
            mentions=(owner.mention,),  # rebuilt from an id (parse_owner): the one live ping
        )

    # -- the grace period -----------------------------------------------------------------

    async def plan_grace(self, ctx: ActionContext, p: GraceParams) -> PlanNote:
        seconds = self.grace(p)
        return PlanNote(
            f"wait {seconds / 3600:g} h for an objection (until about {_at(ctx, seconds)}), "
            "counted from the step's first start, so a restart does not extend it",
            changes=False,
        )

    async def run_grace(self, ctx: ActionContext, p: GraceParams) -> Output:
        """Ends at `grace` after the step FIRST started (ctx.started_at survives restarts);
        an objection recorded in the audit trail, even before a restart, stops the run."""
        seconds = self.grace(p)
        start = ctx.started_at or ctx.clock.now()
        deadline = start + timedelta(seconds=seconds)
        while True:
            if (user := await objection(ctx)) is not None:
                await ctx.progress(
                    f"<@{user}> objected: {p.namespace}/{p.pod} is kept; nothing is reclaimed.",
                    mentions=(f"<@{user}>",),  # the objector's Slack id, from the audit trail
                )
                raise StopRunError(f"kept by <@{user}>: the owner objected during the grace period")
            now = ctx.clock.now()
            if now >= deadline:
                break
            remaining = (deadline - now).total_seconds()
            await ctx.clock.sleep(max(1.0, min(self.policy.poll_seconds, remaining)))
        # Things change in four hours: the pod may be gone, or opted out meanwhile.
        a = await assess(ctx, self.policy, p)
        if a.refused:
            await ctx.progress(f"Not reclaiming: {a.refused}. Nothing was changed.")
            raise StopRunError(f"not reclaimed: {a.refused}")
        return {
            "objected": False,
            "grace_seconds": seconds,
            "grace_ended_at": ctx.clock.now().isoformat(),
            "waited_seconds": (ctx.clock.now() - start).total_seconds(),
        }

    async def check_grace(self, ctx: ActionContext, p: GraceParams) -> CheckResult:
        return await nothing_to_check(ctx, p)


def _owner_facts(owner: Owner, ends: str) -> dict[str, Any]:
    return {
        "owner": owner.mention,
        "owner_user": owner.user or "",
        "owner_group": owner.usergroup or "",
        "owner_source": owner.source,
        "grace_ends": ends,
    }


def specs(policy: ReclaimPolicy) -> tuple[ActionSpec[Any], ...]:
    n = Notice(policy)
    return (
        ActionSpec(
            Action.WORKLOAD_RECLAIM_GUARD,
            "Refuse (end the run cleanly) for opted-out pods, system namespaces, young pods "
            "and kinds gpubot never reclaims; else report the workload and its GPUs.",
            TargetParams,
            False,
            n.plan_guard,
            n.run_guard,
            nothing_to_check,
        ),
        ActionSpec(
            Action.WORKLOAD_NOTIFY_OWNER,
            "Tell the idle pod's owner (annotation, else reclaim.owners) what will be reclaimed "
            "and when, with an Object button.",
            GraceParams,
            False,
            n.plan_notify,
            n.run_notify,
            nothing_to_check,
        ),
        ActionSpec(
            Action.WORKLOAD_GRACE,
            "Wait the grace period (from the step's first start); an owner's objection ends "
            "the run, kept.",
            GraceParams,
            False,
            n.plan_grace,
            n.run_grace,
            n.check_grace,
        ),
    )
