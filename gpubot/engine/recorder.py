"""The record of a run: step and run state in the store, audit events, thread messages."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Mapping
from dataclasses import replace
from typing import Any, Literal, TypeVar

from gpubot.actions.base import ActionContext
from gpubot.domain import messages
from gpubot.domain.control.approvals import ApprovalStatus
from gpubot.domain.control.audit import (
    SYSTEM_ACTOR,
    AuditDraft,
    AuditEvent,
    ChainHead,
    anchor_line,
)
from gpubot.domain.results import Message
from gpubot.domain.runbooks.runs import Run, RunStatus, RunView, StepState, StepStatus
from gpubot.domain.runbooks.spec import Step
from gpubot.engine.audit_trail import AuditTrail
from gpubot.engine.chat import best_effort
from gpubot.engine.deps import Engine
from gpubot.engine.stop_report import standing_blocks
from gpubot.engine.telemetry import run_finished, step_ended, step_recorded
from gpubot.errors import GpubotError

T = TypeVar("T")
log = logging.getLogger(__name__)
anchor_log = logging.getLogger("gpubot.audit")  # `gpubot serve` sends it to stderr
Wait = Literal["wait"]  # a run that ended or paused: the executor stops advancing it
Next = Literal["next", "wait"]  # after a step: go on to the next, or stop advancing
# Endings whose thread message says what the run left on its node or workload.
_STOPPED = (RunStatus.FAILED, RunStatus.CANCELLED)


class RunRecorder:
    """Writes what happens to a run where it must be kept and where people read it."""

    def __init__(self, engine: Engine) -> None:
        self.e = engine
        self.trail = AuditTrail(engine.store, engine.clock, engine.tally)
        # Run views read back by a step's write, for the executor's next look at the run;
        # and, per run with writes in flight here, how many and the newest one's number.
        self._views: dict[str, RunView] = {}
        self._writing: dict[str, tuple[int, int]] = {}
        self._serial = 0

    def take_view(self, run_id: str) -> RunView | None:
        """The run as this process's last write to it read it back, in that write's
        transaction; None when some other write to the run began since (or none read)."""
        return self._views.pop(run_id, None)

    def drop_view(self, run_id: str) -> None:
        self._views.pop(run_id, None)

    async def _write(self, run_id: str, call: Awaitable[T]) -> tuple[T, bool]:
        """Await a write to the run; True with it when it was the only write to the run in
        flight here from its start to its end (so what it read back is still the newest)."""
        self._views.pop(run_id, None)
        self._serial += 1
        mine = self._serial
        before, _newest = self._writing.get(run_id, (0, 0))
        self._writing[run_id] = (before + 1, mine)
        try:
            result = await call
        finally:
            count, newest = self._writing.pop(run_id)
            if count > 1:
                self._writing[run_id] = (count - 1, newest)
        return result, before == 0 and count == 1 and newest == mine

    async def actor(self, run: Run, step: Step) -> str:
        """Who a step acts for: its approvers once approved, gpubot itself otherwise."""
        if step.approval == "auto":
            return SYSTEM_ACTOR
        for request in reversed(await self.e.store.approvals_for(run.id)):
            if request.step_id == step.id and request.status is ApprovalStatus.APPROVED:
                return "+".join(request.approvers)
        return SYSTEM_ACTOR

    async def context(self, run: Run, step: Step, state: StepState) -> ActionContext:
        """What a step's action runs with. It acts for whoever approved it; a step that has
        not asked yet acts for gpubot (its plan is read-only)."""
        pending = state.status is StepStatus.PENDING
        actor = SYSTEM_ACTOR if pending else await self.actor(run, step)

        async def say(text: str, mentions: tuple[str, ...]) -> None:
            await self.say(run, messages.progress(run, step.id, text, mentions=mentions))

        async def post(message: Message) -> None:
            await self.say(run, message)

        async def run_events(kind: str) -> list[AuditEvent]:
            found = await self.e.store.events(incident_id=run.incident_id, run_id=run.id)
            return [e for e in found if e.kind == kind]

        reason = f"gpubot {run.runbook}/{step.id} run={run.id} incident={run.incident_id or '-'}"
        pool = await self.pool_name(run, state.args.get("node"))
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
            escalation=self.e.policy.escalation_of(pool),
            diag_level=self.e.policy.pool_diag_level.get(pool or ""),
            incident_id=run.incident_id,
            evidence=self.e.store,
            step_id=step.id,
        )

    async def pool_name(self, run: Run, node: object) -> str | None:
        """The pool of the step's node (else the run's target) now, when some pool sets its
        own escalation or diagnostics level; None otherwise, or when it cannot be read."""
        policy = self.e.policy
        node = node or run.target
        if not (policy.pool_escalation or policy.pool_diag_level) or not isinstance(node, str):
            return None
        if not node or run.cluster not in self.e.clusters:
            return None
        try:
            info = await self.e.clusters[run.cluster].nodes.get_node(node=node, cached=True)
        except GpubotError:
            return None
        return policy.pool_for(cluster=run.cluster, labels=info.labels).pool.name

    # -- a step's transitions: its state, its audit event (one transaction), its message --

    async def skipped(self, run: Run, step: Step, state: StepState) -> None:
        """A step whose `when` is false."""
        skipped = replace(state, status=StepStatus.SKIPPED, error=f"when: {step.when}")
        event = self.event(run, "step.skipped", step=step, result={"when": step.when})
        await self.save(skipped, event=event)

    async def dry_run(self, run: Run, step: Step, state: StepState, summary: str) -> None:
        """A dry run's step: what it would do, as its output."""
        done = replace(state, status=StepStatus.SUCCEEDED, output={"dry_run": summary})
        event = self.event(run, "step.dry_run", step=step, args=state.args, result=done.output)
        await self.save(done, event=event)
        await self.say(run, messages.step_message(run, done, action=step.action, text=summary))

    async def observed(
        self, run: Run, step: Step, state: StepState, summary: str, why: str
    ) -> None:
        """A mutating step in an observe pool: what it would do, recorded and told; the
        node is not touched. Later steps read it as done, as in a dry run."""
        output = {"observed": summary, "pool": why}
        done = replace(state, status=StepStatus.SUCCEEDED, output=output)
        event = self.event(run, "step.observed", step=step, args=state.args, result=output)
        await self.save(done, event=event)
        text = f"Would: {summary} ({why})"
        await self.say(run, messages.step_message(run, done, action=step.action, text=text))

    async def not_offered(self, run: Run, step: Step, state: StepState, why: str) -> None:
        """A step the node's pool does not offer (quarantine mode: it needs an approval)."""
        skipped = replace(state, status=StepStatus.SKIPPED, error=why)
        event = self.event(run, "step.not_offered", step=step, result={"pool": why})
        await self.save(skipped, event=event)
        text = f"Not offered: {why}"
        await self.say(run, messages.step_message(run, skipped, action=step.action, text=text))

    async def started(self, run: Run, step: Step, state: StepState, *, actor: str) -> None:
        """Durable before acting: after a crash, RUNNING means "check live state first"."""
        result = {"attempt": state.attempts}
        event = self.event(
            run, "step.started", step=step, args=state.args, actor=actor, result=result
        )
        await self.save(state, event=event)

    async def succeeded(
        self, run: Run, step: Step, state: StepState, output: Mapping[str, Any], *, actor: str
    ) -> None:
        done = replace(
            state, status=StepStatus.SUCCEEDED, output=dict(output), finished_at=self.e.clock.now()
        )
        result = {"ok": True, **output}
        event = self.event(
            run, "step.finished", step=step, args=state.args, actor=actor, result=result
        )
        await self.save(done, event=event)
        self.ended(run, step, state, "succeeded")
        text = messages._short(output, 300)
        await self.say(run, messages.step_message(run, done, action=step.action, text=text))

    async def failed(
        self, run: Run, step: Step, state: StepState, error: str, *, note: str = ""
    ) -> None:
        """Recorded with its error; the thread reads `note` when given (else the error)."""
        failed = replace(
            state, status=StepStatus.FAILED, error=error, finished_at=self.e.clock.now()
        )
        result = {"ok": False, "error": error, "on_failure": step.on_failure}
        event = self.event(run, "step.failed", step=step, args=state.args, result=result)
        await self.save(failed, event=event)
        self.ended(run, step, state, "failed")
        text = note or error
        await self.say(run, messages.step_message(run, failed, action=step.action, text=text))

    def ended(self, run: Run, step: Step, state: StepState, outcome: str) -> None:
        """A step that started ended: its duration goes to the step-duration histogram."""
        step_ended(
            self.e.tally,
            run,
            action=step.action,
            outcome=outcome,
            started=state.started_at,
            now=self.e.clock.now(),
        )

    async def skip_to(self, run: Run, step: Step, target: str) -> None:
        """A failed step's `goto`: the unfinished steps between it and `target` are skipped."""
        states = await self.e.store.steps(run.id)
        start = next(s.position for s in states if s.step_id == step.id)
        stop = next(s.position for s in states if s.step_id == target)
        why = f"skipped: {step.id} failed, goto:{target}"
        for s in states:
            if start < s.position < stop and not s.status.finished:
                await self.save(replace(s, status=StepStatus.SKIPPED, error=why))

    async def run_failed(self, run: Run, step: Step, error: str) -> None:
        """A failed step stops its run: the rest is cancelled, no button stays live, and the
        thread gets the run's summary."""
        for s in await self.e.store.steps(run.id):
            if not s.status.finished:
                await self.save(replace(s, status=StepStatus.CANCELLED, error=f"{step.id} failed"))
        await self.set_run(run, RunStatus.FAILED, f"step {step.id} failed: {error}")
        await self.close_approvals(run)
        await self.finish(*await self.e.store.run_with_steps(run.id))

    async def save(self, state: StepState, *, event: AuditDraft | None = None) -> None:
        """Record a step's state; with `event`, its audit event in the same transaction,
        and when the step has ended, the run read back for the executor's next look."""
        try:
            if event is None or not state.status.finished:
                await self._write(state.run_id, self.e.store.save_step(state, audit=event))
            else:
                view, newest = await self._write(
                    state.run_id, self.e.store.save_step_read(state, audit=event)
                )
                if newest:
                    self._views[state.run_id] = view
        except Exception:
            if event is not None:  # the audit append failed with the state it records
                self.e.tally.dependency_error(dependency="audit")
            raise

    async def set_run(
        self, run: Run, status: RunStatus, note: str, *, event: AuditDraft | None = None
    ) -> Run:
        """Record a run's status; with `event`, its audit event in the same transaction."""
        write = self.e.store.update_run(
            run.id, status=status, note=note, now=self.e.clock.now(), audit=event
        )
        changed = await self._audited(run.id, write, audited=event is not None)
        self._count_end(run, changed)
        return changed

    async def end(
        self, run: Run, status: RunStatus, note: str, *, event: AuditDraft
    ) -> tuple[Run, list[AuditEvent], ChainHead | None]:
        """set_run with its event, and the incident's events and the chain's head read in
        the same transaction (what the run's summary and its anchor show)."""
        write = self.e.store.end_run(
            run.id, status=status, note=note, now=self.e.clock.now(), audit=event
        )
        changed, events, head = await self._audited(run.id, write, audited=True)
        self._count_end(run, changed)
        return changed, events, head

    async def _audited(self, run_id: str, write: Awaitable[T], *, audited: bool) -> T:
        try:
            result, _newest = await self._write(run_id, write)
        except Exception:
            if audited:  # the audit append failed with the state it records
                self.e.tally.dependency_error(dependency="audit")
            raise
        return result

    def _count_end(self, before: Run, after: Run) -> None:
        if after.status.finished and not before.status.finished:
            run_finished(self.e.tally, after)

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
        await best_effort(
            self.e.notifier.post(incident_id=run.incident_id, message=message),
            f"post to the thread of {run.incident_id}",
        )

    async def close_approvals(self, run: Run) -> None:
        """A run that ended leaves no live buttons: a later click is refused, not obeyed."""
        for request in await self.e.store.approvals_for(run.id):
            if request.status is ApprovalStatus.PENDING:
                closed = replace(request, status=ApprovalStatus.CANCELLED)
                await self.e.store.replace_approval(closed, expected_votes=len(request.votes))

    # -- how a run ends or pauses ----------------------------------------------------

    async def needs_human(self, run: Run, step: Step, state: StepState, reason: str) -> Wait:
        await self.save(replace(state, status=StepStatus.NEEDS_HUMAN, error=reason))
        self.ended(run, step, state, "needs_human")
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
        trail: tuple[list[AuditEvent], ChainHead | None] | None = None
        if not run.status.finished:
            failed = [s.step_id for s in states if s.status is StepStatus.FAILED]
            # An evidence gathering the node's pool did not require does not fail the run.
            without = [s.step_id for s in states if s.output.get("not_required")]
            failed = [f for f in failed if f not in without]
            status = RunStatus.FAILED if failed else RunStatus.SUCCEEDED
            note = f"failed step(s): {', '.join(failed)}" if failed else ""
            if without:
                gone = f"went on without evidence ({', '.join(without)} failed)"
                note = f"{note}; {gone}" if note else gone
            # The end and its event in one transaction (as audit() would write it).
            finished = self.event(run, "run.finished", result={"status": status.value})
            run, events, head = await self.end(run, status, note, event=finished)
            trail = (events, head)
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
        # The incident's events and the head in one read, so the summary and the anchor agree:
        # the read of the run's end when this call ended it.
        if trail is not None:
            events, head = trail
        elif run.incident_id:
            events, head = await self.e.store.incident_trail(run.incident_id)
        else:
            head = await self.e.store.head()
        level = logging.INFO if head is not None else logging.WARNING
        anchor_log.log(level, "%s (run %s %s)", anchor_line(head), run.id, run.status.value)
        if run.incident_id:
            await self.say(run, messages.audit_summary(events, head=head))
        return run
