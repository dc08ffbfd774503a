"""A person stops a run or lets a paused one go on: checked against the approver group, recorded.

Both only write the store (run and step state, audit event); the leader's executor acts on
them, on this replica or on another one (the service's follow() reads the events), so a
decision taken in any process, the break-glass CLI included, reaches the running bot.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import NoReturn

from gpubot.domain import messages
from gpubot.domain.control.audit import AuditEvent
from gpubot.domain.runbooks.runs import Run, RunStatus, StepState, StepStatus
from gpubot.engine.audit_trail import AuditTrail
from gpubot.engine.deps import Engine
from gpubot.engine.recorder import RunRecorder
from gpubot.engine.stop_report import standing_blocks
from gpubot.errors import ApprovalError

CANCELLED_KIND = "run.cancelled"
RESUMED_KIND = "run.resumed"
# Where a decision is taken with no chat to tell (`via` of the break-glass CLI): the leader
# tells the run's thread when it reads the event.
UNTOLD_VIA = "cli"


@dataclass(frozen=True)
class Intervention:
    """What a cancel or resume changed, for the one line that answers it."""

    run: Run
    step: str | None  # the step it acted at
    message: str


class Interventions:
    """Cancel and resume, with the same group rule as an approval click."""

    def __init__(self, engine: Engine) -> None:
        self.e = engine
        # Every event the engine writes.
        self.trail = AuditTrail(engine.store, engine.clock, engine.tally)
        self.record = RunRecorder(engine)

    def _group_for(self, run: Run, step_id: str | None) -> str:
        runbook = self.e.runbooks.get(run.runbook)
        if runbook is None or step_id is None:
            return self.e.policy.default_group
        return runbook.step(step_id).approvers or self.e.policy.default_group

    def _admit(self, run: Run, step_id: str | None, user: str, user_groups: Collection[str]) -> str:
        """The group that decides for this step; ApprovalError when `user` is not in it."""
        name = self._group_for(run, step_id)
        group = self.e.policy.groups.get(name)
        if group is None or not group.admits(user, user_groups):
            raise ApprovalError(f"You are not in the approver group '{name}' for this run.")
        return name

    async def _refuse(
        self, run: Run, user: str, kind: str, message: str, via: Mapping[str, str] | None
    ) -> NoReturn:
        await self.trail.record(
            "run.refused",
            actor=user,
            incident_id=run.incident_id,
            run_id=run.id,
            target=run.target,
            result={"request": kind, "message": message, **_via(via)},
            reason=f"runbook {run.runbook}",
        )
        raise ApprovalError(message)

    async def cancel(
        self,
        *,
        run_id: str,
        user: str,
        reason: str = "",
        user_groups: Collection[str] = (),
        via: Mapping[str, str] | None = None,
    ) -> Intervention:
        """Stop a run that has not finished: its open steps are cancelled, its approval
        buttons closed. A step whose action is running now finishes (no process can cut an
        action another one runs); the leader starts nothing after it."""
        run, states = await self.e.store.run_with_steps(run_id)
        current = _current(states)
        step_id = current.step_id if current else None
        try:
            group = self._admit(run, step_id, user, user_groups)
        except ApprovalError as exc:
            await self._refuse(run, user, "cancel", str(exc), via)
        if run.status.finished:
            await self._refuse(
                run, user, "cancel", f"Run {run.id} already {run.status.value}.", via
            )
        why = f"cancelled by {user}" + (f": {reason}" if reason else "")
        running = [s.step_id for s in states if s.status is StepStatus.RUNNING]
        for s in states:
            if not s.status.finished:
                await self.record.save(replace(s, status=StepStatus.CANCELLED, error=why))
        await self.record.close_approvals(run)
        event = self.trail.draft(
            CANCELLED_KIND,
            actor=user,
            incident_id=run.incident_id,
            run_id=run.id,
            step=step_id,
            target=run.target,
            result={"reason": why, "group": group, "running": running, **_via(via)},
            reason=f"runbook {run.runbook}",
            dry_run=run.dry_run,
        )
        run = await self.record.set_run(run, RunStatus.CANCELLED, why, event=event)
        # The CLI tells no chat, so it need not read the node: the leader tells the thread.
        told_here = _via(via).get("via") != UNTOLD_VIA
        steps = await self.e.store.steps(run.id)
        left = await standing_blocks(self.e, run, steps) if told_here else ()
        await self.record.say(run, messages.text(f"Run {run.id} {why}", standing=left))
        note = f"Cancelled {run.id}."
        if running:
            note += f" Step {', '.join(running)} was running: its action may still finish."
        return Intervention(run=run, step=step_id, message=note)

    async def tell_cancelled(self, event: AuditEvent) -> None:
        """A cancel taken where no chat is (the break-glass CLI), told in the run's thread:
        who and why, and where its node or workload stands now."""
        if event.kind != CANCELLED_KIND or event.result.get("via") != UNTOLD_VIA:
            return
        if event.run_id is None:
            return
        run, states = await self.e.store.run_with_steps(event.run_id)
        why = str(event.result.get("reason") or run.note)
        left = await standing_blocks(self.e, run, states)
        title = f"Run {run.id} {why} (break-glass CLI)"
        await self.record.say(run, messages.text(title, standing=left))

    async def resume(
        self,
        *,
        run_id: str,
        user: str,
        user_groups: Collection[str] = (),
        via: Mapping[str, str] | None = None,
    ) -> Intervention:
        """A run paused for a human (NEEDS_HUMAN) goes on: its paused step starts again from
        the top, through its approval gate again, so a step that needs approval asks anew."""
        run, states = await self.e.store.run_with_steps(run_id)
        paused = next((s for s in states if s.status is StepStatus.NEEDS_HUMAN), None)
        step_id = paused.step_id if paused else (c.step_id if (c := _current(states)) else None)
        try:
            group = self._admit(run, step_id, user, user_groups)
        except ApprovalError as exc:
            await self._refuse(run, user, "resume", str(exc), via)
        if run.status is not RunStatus.NEEDS_HUMAN or paused is None:
            message = f"Run {run.id} is {run.status.value}, not waiting for a human."
            await self._refuse(run, user, "resume", message, via)
        await self.record.save(
            replace(paused, status=StepStatus.PENDING, error="", attempts=0, started_at=None)
        )
        event = self.trail.draft(
            RESUMED_KIND,
            actor=user,
            incident_id=run.incident_id,
            run_id=run.id,
            step=paused.step_id,
            target=run.target,
            result={"was": paused.error, "group": group, **_via(via)},
            reason=f"runbook {run.runbook}",
            dry_run=run.dry_run,
        )
        run = await self.record.set_run(run, RunStatus.RUNNING, f"resumed by {user}", event=event)
        await self.record.say(
            run, messages.text(f"Run {run.id} resumed by {user} at step {paused.step_id}")
        )
        return Intervention(
            run=run, step=paused.step_id, message=f"Resumed {run.id} at step {paused.step_id}."
        )


def _current(states: list[StepState]) -> StepState | None:
    return next((s for s in states if not s.status.finished), None)


def _via(via: Mapping[str, str] | None) -> dict[str, str]:
    return dict(via) if via else {}
