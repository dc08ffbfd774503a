"""The record of a run: step and run state in the store, audit events, thread messages."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

from gpubot.actions.base import ActionContext
from gpubot.domain import messages
from gpubot.domain.approvals import ApprovalStatus
from gpubot.domain.audit import SYSTEM_ACTOR, AuditDraft, AuditEvent, anchor_line
from gpubot.domain.results import Message
from gpubot.domain.runbooks import Step
from gpubot.domain.runs import Run, RunStatus, StepState, StepStatus
from gpubot.engine.audit_trail import AuditTrail
from gpubot.engine.context import steps_context
from gpubot.engine.deps import Engine
from gpubot.engine.observe import run_finished, step_recorded
from gpubot.engine.standing import standing_blocks

log = logging.getLogger(__name__)
anchor_log = logging.getLogger("gpubot.audit")  # `gpubot serve` sends it to stderr
Wait = Literal["wait"]  # a run that ended or paused: the executor stops advancing it
# Endings whose thread message says what the run left on its node or workload.
_STOPPED = (RunStatus.FAILED, RunStatus.CANCELLED)


class RunRecorder:
    """Writes what happens to a run where it must be kept and where people read it."""

    def __init__(self, engine: Engine) -> None:
        self.e = engine
        self.trail = AuditTrail(engine.store, engine.clock)

    async def actor(self, run: Run, step: Step) -> str:
        if step.approval == "auto":
            return SYSTEM_ACTOR
        for request in reversed(await self.e.store.approvals_for(run.id)):
            if request.step_id == step.id and request.status is ApprovalStatus.APPROVED:
                return "+".join(request.approvers)
        return SYSTEM_ACTOR

    def variables(self, run: Run, states: list[StepState]) -> dict[str, Any]:
        return {
            **run.context,
            "params": dict(run.context.get("params", {})),
            "steps": steps_context(states),
            "run": {"id": run.id, "requested_by": run.requested_by, "dry_run": run.dry_run},
        }

    def ctx(self, run: Run, step: Step, *, actor: str) -> ActionContext:
        async def say(text: str, mentions: tuple[str, ...]) -> None:
            await self.say(run, messages.progress(run, step.id, text, mentions=mentions))

        async def post(message: Message) -> None:
            await self.say(run, message)

        async def run_events(kind: str) -> list[AuditEvent]:
            found = await self.e.store.events(incident_id=run.incident_id, run_id=run.id)
            return [e for e in found if e.kind == kind]

        reason = f"gpubot {run.runbook}/{step.id} run={run.id} incident={run.incident_id or '-'}"
        return ActionContext(
            cluster=self.e.clusters[run.cluster],
            clock=self.e.clock,
            actor=actor,
            reason=reason,
            dry_run=run.dry_run,
            say=say,
            run_id=run.id,
            post=post,
            run_events=run_events,
            ledger=self.e.store,
            escalation=self.e.policy.escalation,
            incident_id=run.incident_id,
        )

    async def save(self, state: StepState, *, event: AuditDraft | None = None) -> None:
        """Record a step's state; with `event`, its audit event in the same transaction."""
        await self.e.store.save_step(state, audit=event)

    async def set_run(
        self, run: Run, status: RunStatus, note: str, *, event: AuditDraft | None = None
    ) -> Run:
        """Record a run's status; with `event`, its audit event in the same transaction."""
        changed = await self.e.store.update_run(
            run.id, status=status, note=note, now=self.e.clock.now(), audit=event
        )
        if status.finished and not run.status.finished:
            run_finished(self.e.tally, changed)
        return changed

    def event(
        self,
        run: Run,
        kind: str,
        *,
        step: Step | None = None,
        args: Mapping[str, Any] | None = None,
        result: Mapping[str, Any] | None = None,
        actor: str = SYSTEM_ACTOR,
    ) -> AuditDraft:
        draft = self.trail.draft(
            kind,
            actor=actor,
            incident_id=run.incident_id,
            run_id=run.id,
            step=step.id if step else None,
            action=step.action if step else None,
            target=run.target,
            args=dict(args or {}),
            result=dict(result or {}),
            reason=f"runbook {run.runbook}" + (f" step {step.id}" if step else ""),
            dry_run=run.dry_run,
        )
        step_recorded(self.e.tally, run, draft)  # a step outcome: a log line and a count
        return draft

    async def audit(
        self,
        run: Run,
        kind: str,
        *,
        step: Step | None = None,
        args: Mapping[str, Any] | None = None,
        result: Mapping[str, Any] | None = None,
        actor: str = SYSTEM_ACTOR,
    ) -> None:
        await self.trail.write(
            self.event(run, kind, step=step, args=args, result=result, actor=actor)
        )

    async def say(self, run: Run, message: Message) -> None:
        try:
            await self.e.notifier.post(incident_id=run.incident_id, message=message)
        except Exception:  # chat is best effort; the audit trail is the record
            log.exception("could not post to the thread of %s", run.incident_id)

    async def close_approvals(self, run: Run) -> None:
        """A run that ended leaves no live buttons: a later click is refused, not obeyed."""
        for request in await self.e.store.approvals_for(run.id):
            if request.status is ApprovalStatus.PENDING:
                closed = replace(request, status=ApprovalStatus.CANCELLED)
                await self.e.store.replace_approval(closed, expected_votes=len(request.votes))

    # -- how a run ends or pauses ----------------------------------------------------

    async def needs_human(self, run: Run, step: Step, state: StepState, reason: str) -> Wait:
        await self.save(replace(state, status=StepStatus.NEEDS_HUMAN, error=reason))
        await self.set_run(run, RunStatus.NEEDS_HUMAN, reason)
        await self.audit(run, "step.needs_human", step=step, result={"reason": reason})
        left = await standing_blocks(self.e, run, await self.e.store.steps(run.id))
        await self.say(run, messages.text(f"Run paused at step {step.id}", reason, standing=left))
        return "wait"

    async def hold(self, run: Run, step: Step, state: StepState, reason: str) -> Wait:
        """Recorded on the step, the run and the audit trail; what people read is the one
        summary of every held step (the executor posts it), not a message per step."""
        if state.status is not StepStatus.HELD or run.note != reason:
            await self.save(replace(state, status=StepStatus.HELD, error=reason))
            await self.set_run(run, RunStatus.HELD, reason)
            await self.audit(run, "step.held", step=step, result={"reason": reason})
        return "wait"

    async def cancel(self, run: Run, reason: str) -> Wait:
        for s in await self.e.store.steps(run.id):
            if not s.status.finished:
                await self.save(replace(s, status=StepStatus.CANCELLED, error=reason))
        await self.close_approvals(run)
        run = await self.set_run(run, RunStatus.CANCELLED, reason)
        await self.audit(run, "run.cancelled", result={"reason": reason})
        await self.finish(run, await self.e.store.steps(run.id))
        return "wait"

    async def finish(self, run: Run, states: list[StepState]) -> Run:
        if not run.status.finished:
            failed = [s.step_id for s in states if s.status is StepStatus.FAILED]
            status = RunStatus.FAILED if failed else RunStatus.SUCCEEDED
            note = f"failed step(s): {', '.join(failed)}" if failed else ""
            # The end and its event in one transaction (as audit() would write it).
            finished = self.event(run, "run.finished", result={"status": status.value})
            run = await self.set_run(run, status, note, event=finished)
        elif run.status is not RunStatus.CANCELLED:
            await self.audit(run, "run.finished", result={"status": run.status.value})
        actors = {
            s.step_id: await self.actor(run, self.e.runbooks[run.runbook].step(s.step_id))
            for s in states
            if s.status is StepStatus.SUCCEEDED
        }
        left = await standing_blocks(self.e, run, states) if run.status in _STOPPED else ()
        await self.say(run, messages.run_summary(run, states, actors, standing=left))
        # The head leaves the database here, in the log and the thread: an anchor that
        # `gpubot audit verify --expect-head/--min-seq` can later hold the trail to.
        head = await self.e.store.head()
        level = logging.INFO if head is not None else logging.WARNING
        anchor_log.log(level, "%s (run %s %s)", anchor_line(head), run.id, run.status.value)
        if run.incident_id:
            events = await self.e.store.events(incident_id=run.incident_id)
            await self.say(run, messages.audit_summary(events, head=head))
        return run
