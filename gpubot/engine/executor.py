"""Executor: advances a run step by step through gates, timeouts, retries and failure rules."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gpubot.actions.base import ActionContext, ActionSpec, Output
from gpubot.domain import messages
from gpubot.domain.control.approvals import (
    ApprovalRequest,
    ApprovalStatus,
    expire_if_due,
    new_approval_id,
)
from gpubot.domain.control.pools import PoolChoice
from gpubot.domain.runbooks.runs import Run, RunStatus, RunView, StepState, StepStatus
from gpubot.domain.runbooks.shards import run_key
from gpubot.domain.runbooks.spec import Runbook, Step
from gpubot.domain.runbooks.templating import evaluate, render_value
from gpubot.domain.runbooks.variables import run_variables
from gpubot.domain.validation_errors import first_problem
from gpubot.engine.blast_radius import BlastRadiusGate
from gpubot.engine.chat import best_effort
from gpubot.engine.deps import Engine
from gpubot.engine.pool_gate import PoolGate
from gpubot.engine.recorder import Next, RunRecorder
from gpubot.engine.stop_report import standing_blocks
from gpubot.engine.taken_back import taken_back
from gpubot.engine.telemetry import approval_decided, step_outcome
from gpubot.errors import (
    GpubotError,
    NeedsHumanError,
    StopRunError,
    TemplateError,
    TemporaryStepError,
)

log = logging.getLogger(__name__)
T = TypeVar("T")
_WAITING = (StepStatus.PENDING, StepStatus.WAITING_APPROVAL, StepStatus.APPROVED, StepStatus.HELD)


class Executor:
    """Runs steps until a run finishes or must wait; every decision is recorded."""

    leader_check_seconds = 1.0  # how often a running action checks that we still lead

    def __init__(self, engine: Engine, gate: BlastRadiusGate) -> None:
        self.e = engine
        self.record = RunRecorder(engine)
        self.gate = gate  # the blast-radius caps, shared with the service that wakes holds
        self.pools = PoolGate(engine)  # the node's pool and its mode, before each step
        # Told of each run that ends here (the service splits off the faults it held).
        self.on_finished: Callable[[Run], None] | None = None
        self._locks: dict[str, asyncio.Lock] = {}
        self._stopping = False
        self._actions: dict[asyncio.Task[Any], str] = {}  # actions running now → run key

    def stop_starting(self) -> None:
        """Shutdown: start no step (nor attempt) from now on."""
        self._stopping = True

    def interrupt(self) -> int:
        """Shutdown: cancel the actions running now at their next await. Their steps stay
        RUNNING in the store, which recovery reads as "check live state, then resume"; store
        writes are never cut, only the action. Returns how many were interrupted."""
        self._stopping = True
        for task in self._actions:
            task.cancel()
        return len(self._actions)

    def acting_on(self) -> set[str]:
        """The run keys (gpubot.domain.runbooks.shards.run_key) of the actions running now."""
        return set(self._actions.values())

    def busy(self, run_id: str) -> bool:
        """Whether this process is advancing the run right now."""
        lock = self._locks.get(run_id)
        return lock is not None and lock.locked()

    async def advance(self, run_id: str, *, view: RunView | None = None) -> Run:
        """Run steps until the run finishes or must wait. Safe to call at any time, repeatedly.

        `view`: the run as read in the transaction that created it, used for the first step
        when nothing else advances the run here at the time."""
        run = await self._advance(run_id, view)
        if run.status.finished:
            self.pools.forget(run.id)
            if self.on_finished is not None:
                self.on_finished(run)
            await self.gate.unhold(run.id)  # cancelled while held, say
            self.gate.released()
        return run

    async def _advance(self, run_id: str, view: RunView | None) -> Run:
        lock = self._locks.setdefault(run_id, asyncio.Lock())
        if lock.locked():
            view = None  # read once the advance ahead of this one has moved the run on
        async with lock:
            try:
                while True:
                    # One read for all three before every step (benchmarks/quarantine.py):
                    # the one the last step's write made in its own transaction, if any.
                    run, states, incident_open = view or await self.e.store.run_state(run_id)
                    if run.status.finished or run.status is RunStatus.NEEDS_HUMAN:
                        return run
                    if not self.e.leadership.leads(run_key(run)) or self._stopping:
                        return run  # another replica holds the run's Lease and advances it
                    current = next((s for s in states if not s.status.finished), None)
                    if current is None:
                        return await self.record.finish(run, states)
                    if await self._step(run, current, states, incident_open) == "wait":
                        return await self.e.store.get_run(run_id)
                    view = self.record.take_view(run_id)
            finally:
                self.record.drop_view(run_id)

    # -- one step -------------------------------------------------------------------------

    async def _step(
        self, run: Run, state: StepState, states: list[StepState], incident_open: bool | None
    ) -> Next:
        """`incident_open`: whether the run's incident was open when the run was read (None:
        the run has no incident)."""
        runbook = self.e.runbooks[run.runbook]
        step = runbook.step(state.step_id)
        spec = self.e.registry.get(step.action)
        stale = state.status in _WAITING and spec.mutating and not run.dry_run
        if stale and (
            (reason := self._stale_reason(run, runbook, incident_open))
            or (reason := await taken_back(self.e, run, runbook, states, waiting_at=step.id))
        ):
            return await self.record.cancel(run, reason)
        variables = run_variables(run, states)
        try:
            if (
                state.status is StepStatus.PENDING
                and step.when
                and not evaluate(step.when, variables)
            ):
                await self.record.skipped(run, step, state)
                return "next"
            args = (
                render_value(step.args, variables)
                if state.status is StepStatus.PENDING
                else state.args
            )
            params = spec.params.model_validate(args)
        except (TemplateError, ValidationError) as exc:
            return await self._fail(run, step, state, _one_line(exc))
        if state.status is StepStatus.WAITING_APPROVAL:
            # Decided before anything else reads the step: PENDING again when its request is
            # gone, so the PENDING branch below asks again rather than running it unapproved.
            decided = await self._decision(run, step, state)
            if decided is None:
                return "wait"
            state = decided
        ctx = await self.record.context(run, step, state)
        if state.status is StepStatus.RUNNING:
            return await self._recover(run, step, spec, state, params, ctx)
        if state.status is StepStatus.PENDING:
            state = replace(state, args=dict(args))
            if run.dry_run:
                note = await spec.plan(ctx, params)
                await self.record.dry_run(run, step, state, note.summary)
                return "next"
            pool, held_back = await self.pools.decide(run, step, spec, params)
            if pool is not None and held_back is not None:
                if pool.pool.mode == "observe":
                    note = await spec.plan(ctx, params)
                    await self.record.observed(
                        run, step, state, note.summary, f"{pool}; {held_back}"
                    )
                else:
                    await self.record.not_offered(run, step, state, f"{pool}; {held_back}")
                return "next"
            if step.approval != "auto":
                return await self._ask(run, step, spec, state, params, ctx, pool=pool)
            state = replace(state, status=StepStatus.APPROVED)
        if step.approval != "auto" and (closed := await self.pools.window_closed(run, params)):
            if state.status is not StepStatus.HELD:  # said once, not at every look
                await self.record.say(run, messages.text(f"Step {step.id} waits", closed))
            return await self.record.hold(run, step, state, closed)
        async with self.gate.admit(run, step, spec, state, params) as admitted:
            if admitted is None:
                return "wait"  # held by a blast-radius cap until a slot frees
            return await self._execute(run, step, spec, admitted, params, ctx)

    @staticmethod
    def _stale_reason(run: Run, runbook: Runbook, incident_open: bool | None) -> str | None:
        """An alert that resolved (or was replayed after recovery) must not drive a mutation."""
        if run.incident_id is None or runbook.on_resolve == "continue" or incident_open:
            return None
        return (
            f"incident {run.incident_id} resolved before the remaining steps ran; nothing more done"
        )

    async def _ask(
        self,
        run: Run,
        step: Step,
        spec: ActionSpec[Any],
        state: StepState,
        params: BaseModel,
        ctx: ActionContext,
        *,
        pool: PoolChoice | None = None,
    ) -> Next:
        now = self.e.clock.now()
        default = self.e.policy.default_group
        group = (
            pool.pool.approver_group(
                level=step.approval, step_group=step.approvers, default=default
            )
            if pool is not None
            else step.approvers or default
        )
        request = ApprovalRequest(
            id=new_approval_id(),
            run_id=run.id,
            step_id=step.id,
            level=step.approval,
            group=group,
            requested_by=run.requested_by,
            created_at=now,
            expires_at=now + self.e.policy.approval_expiry,
        )
        await self.e.store.create_approval(request)
        await self.record.save(replace(state, status=StepStatus.WAITING_APPROVAL))
        await self.record.set_run(
            run, RunStatus.WAITING_APPROVAL, f"step {step.id} waits for approval"
        )
        await self.record.audit(
            run,
            "approval.requested",
            step=step,
            args=state.args,
            result={"approval_id": request.id, "level": request.level, "group": request.group},
        )
        note = await spec.plan(ctx, params)
        asked = self.e.policy.groups.get(request.group)
        empty = asked is None or not (asked.users or asked.usergroups)
        message = messages.approval_message(run, step.id, request, note.summary, group_empty=empty)
        await best_effort(  # the request is stored: `gpubot approve` and the tick still work
            self.e.notifier.ask_approval(
                incident_id=run.incident_id, request=request, message=message
            ),
            f"post approval request {request.id}",
        )
        return "wait"

    async def _decision(self, run: Run, step: Step, state: StepState) -> StepState | None:
        requests = [r for r in await self.e.store.approvals_for(run.id) if r.step_id == step.id]
        if not requests:  # no request stored (lost to a crash, or removed): ask again
            return replace(state, status=StepStatus.PENDING)
        request = requests[-1]
        current = expire_if_due(request, now=self.e.clock.now())
        if current.status is ApprovalStatus.PENDING:
            return None
        if current.status is ApprovalStatus.APPROVED:
            approved = replace(state, status=StepStatus.APPROVED)
            await self.record.save(approved)
            return approved
        if current.status is ApprovalStatus.EXPIRED and request.status is ApprovalStatus.PENDING:
            await self.e.store.replace_approval(current, expected_votes=len(request.votes))
            approval_decided(self.e.tally, run, current, now=self.e.clock.now())
            await self.record.audit(
                run, "approval.expired", step=step, result={"approval_id": request.id}
            )
        verb = "denied" if current.status is ApprovalStatus.DENIED else "expired"
        by = ", ".join(v.user for v in current.votes if v.decision == "deny")
        reason = f"step {step.id} was {verb}" + (f" by {by}" if by else "")
        step_outcome(self.e.tally, run, step=step.id, action=step.action, result=verb)
        await self.record.save(replace(state, status=StepStatus.DENIED, error=reason))
        await self.record.cancel(run, reason)
        return None

    async def _execute(
        self,
        run: Run,
        step: Step,
        spec: ActionSpec[Any],
        state: StepState,
        params: BaseModel,
        ctx: ActionContext,
    ) -> Next:
        if run.status is not RunStatus.RUNNING:
            run = await self.record.set_run(run, RunStatus.RUNNING, "")
        attempts = state.attempts
        while True:
            if not self.e.leadership.leads(run_key(run)) or self._stopping:
                # Lost the run's Lease, or shutting down: start nothing more; the (next)
                # holder picks the run up.
                return "wait"
            attempts += 1
            ctx = replace(ctx, deadline=self.e.clock.now() + timedelta(seconds=step.timeout))
            state = replace(
                state,
                status=StepStatus.RUNNING,
                attempts=attempts,
                # The first start is kept: a wait after a restart counts from it.
                started_at=state.started_at or self.e.clock.now(),
                error="",
            )
            ctx = replace(ctx, started_at=state.started_at)
            await self.record.started(run, step, state, actor=ctx.actor)
            try:
                output = await self._action(
                    spec.run(ctx, params), limit=step.timeout, key=run_key(run)
                )
                self.gate.returned(run, spec, params)
            except _Interrupted:
                interrupted = {"attempt": attempts}
                await self.record.audit(
                    run, "step.interrupted", step=step, actor=ctx.actor, result=interrupted
                )
                return "wait"  # left RUNNING: the next leader checks live state and resumes
            except TemporaryStepError as exc:
                if attempts <= step.retries:
                    await self.record.audit(
                        run,
                        "step.retry",
                        step=step,
                        actor=ctx.actor,
                        result={"attempt": attempts, "error": str(exc)},
                    )
                    delay = exc.delay or step.retry_delay
                    # In the thread too, as the step's progress: people see why it is slow.
                    await ctx.progress(
                        f"attempt {attempts} of {step.retries + 1} failed: {exc}; "
                        f"retrying in {delay:g}s"
                    )
                    try:
                        await self._action(self.e.clock.sleep(delay), limit=None, key=run_key(run))
                    except _Interrupted:
                        return "wait"  # as above: RUNNING, resumed by the next leader
                    continue
                return await self._fail(run, step, state, str(exc))
            except TimeoutError:
                error = f"timed out after {step.timeout:g}s"
                if spec.mutating:
                    check = await spec.check(ctx, params)
                    if check.state == "done":
                        return await self._succeed(run, step, state, dict(check.output), ctx)
                    error += f": {check.detail}"
                return await self._fail(run, step, state, error)
            except NeedsHumanError as exc:
                return await self.record.needs_human(run, step, state, str(exc))
            except StopRunError as exc:  # nothing (more) to do: a clean end, not a failure
                await self.record.audit(
                    run, "step.stopped", step=step, actor=ctx.actor, result={"reason": str(exc)}
                )
                self.record.ended(run, step, state, "stopped")
                return await self.record.cancel(run, str(exc))
            except GpubotError as exc:
                return await self._fail(run, step, state, str(exc))
            except Exception as exc:  # a bug in one action must not leave the run hanging
                log.exception("step %s of run %s raised", step.id, run.id)
                return await self._fail(run, step, state, f"unexpected error: {exc!r}")
            return await self._succeed(run, step, state, output, ctx)

    async def _action(self, work: Awaitable[T], *, limit: float | None, key: str) -> T:
        """Run an action (or a retry's wait) in a task of its own, so that shutdown, or the
        loss of the Lease of the run's key, can interrupt it, and only it; _Interrupted when
        that happened. A replica that lost the Lease must not go on evicting beside the new
        holder."""
        task: asyncio.Task[Any] = asyncio.ensure_future(asyncio.wait_for(work, timeout=limit))
        self._actions[task] = key
        try:
            while not task.done():
                await asyncio.wait({task}, timeout=self.leader_check_seconds)
                if not task.done() and not self.e.leadership.leads(key):
                    log.warning("lost the Lease: interrupting a running step for the new leader")
                    task.cancel()
                    await asyncio.wait({task})
                    if task.cancelled():
                        raise _Interrupted
            result: T = task.result()
        except asyncio.CancelledError:
            if not task.done():  # this coroutine itself was cancelled: the action goes too
                task.cancel()
                raise
            if self._stopping and task.cancelled():
                raise _Interrupted from None
            raise
        finally:
            self._actions.pop(task, None)
        return result

    async def _recover(
        self,
        run: Run,
        step: Step,
        spec: ActionSpec[Any],
        state: StepState,
        params: BaseModel,
        ctx: ActionContext,
    ) -> Next:
        """A step was RUNNING when the process died: read live state before doing anything."""
        if not spec.mutating:
            return await self._execute(run, step, spec, state, params, ctx)
        check = await spec.check(ctx, params)
        await self.record.audit(
            run,
            "step.recovered",
            step=step,
            args=state.args,
            result={"check": check.state, "detail": check.detail},
        )
        if check.state == "done":
            await self.record.say(
                run,
                messages.text(
                    f"Step {step.id} was interrupted by a restart; live state shows it took effect",
                    check.detail,
                ),
            )
            return await self._succeed(run, step, state, dict(check.output), ctx)
        if check.state == "not_done":
            await self.record.say(
                run,
                messages.text(
                    f"Step {step.id} was interrupted before it took effect; running it again",
                    check.detail,
                ),
            )
            return await self._execute(run, step, spec, state, params, ctx)
        reason = f"step {step.id} was interrupted and its effect is unknown: {check.detail}"
        await self.record.save(replace(state, status=StepStatus.NEEDS_HUMAN, error=reason))
        await self.record.set_run(run, RunStatus.NEEDS_HUMAN, reason)
        left = await standing_blocks(self.e, run, await self.e.store.steps(run.id))
        await self.record.say(
            run, messages.text("A human must check this run", reason, standing=left)
        )
        return "wait"

    # -- outcomes -------------------------------------------------------------------------

    async def _succeed(
        self, run: Run, step: Step, state: StepState, output: Output, ctx: ActionContext
    ) -> Next:
        await self.record.succeeded(run, step, state, output, actor=ctx.actor)
        return "next"

    async def _fail(self, run: Run, step: Step, state: StepState, error: str) -> Next:
        """Recorded, then the step's `on_failure` decides: go on, jump to `goto`, or stop.
        A failed evidence gathering follows its node's pool instead (_evidence_failed)."""
        if self.e.registry.get(step.action).evidence:
            return await self._evidence_failed(run, step, state, error)
        await self.record.failed(run, step, state, error)
        if step.on_failure == "continue":
            return "next"
        if step.goto is not None:
            await self.record.skip_to(run, step, step.goto)
            return "next"
        await self.record.run_failed(run, step, error)
        return "wait"

    async def _evidence_failed(self, run: Run, step: Step, state: StepState, error: str) -> Next:
        """A pool that requires evidence stops the run here, before the reset, reboot or
        hand-off the evidence was for; any other pool goes on without it: the failure is
        said in the thread and does not make the run end failed."""
        required, pool = await self.pools.evidence_required(run, state.args.get("node"))
        if required:
            why = (
                f"pool {pool} requires evidence before anything destructive "
                "(evidence_required: true): the steps after it do not run"
            )
            await self.record.failed(run, step, state, error, note=f"{error}; {why}")
            await self.record.run_failed(run, step, f"{error}; {why}")
            return "wait"
        went_on = f"pool {pool} does not require evidence: the run goes on without it"
        await self.record.failed(
            run,
            step,
            replace(state, output={"not_required": went_on}),
            error,
            note=(f"{error}; {went_on}"),
        )
        return "next"


class _Interrupted(Exception):
    """An action cancelled by shutdown at a safe point; its step stays RUNNING."""


def _one_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return first_problem(exc, prefix="invalid args: ")
    return str(exc).splitlines()[0]
