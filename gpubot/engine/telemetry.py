"""What the engine reports as it happens: step outcomes, step durations, approval decisions
and run ends (log lines, counters and histograms), calls to a dependency that failed, and this
replica gaining or losing the leadership."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Literal, Protocol

from gpubot.domain.control.approvals import ApprovalRequest, ApprovalStatus
from gpubot.domain.control.audit import AuditDraft
from gpubot.domain.runbooks.runs import Run

log = logging.getLogger(__name__)

# Audit event kind → the step outcome it records (the `result` label of the counter).
STEP_OUTCOMES = {
    "step.finished": "succeeded",
    "step.failed": "failed",
    "step.skipped": "skipped",
    "step.dry_run": "dry_run",
    "step.held": "held",
    "step.needs_human": "needs_human",
    "step.retry": "retried",
    "step.stopped": "stopped",
    "step.interrupted": "interrupted",
}
RESULTS = (*STEP_OUTCOMES.values(), "denied", "expired")
# How a started step ended (the `outcome` label of the step-duration histogram).
STEP_ENDINGS = ("succeeded", "failed", "needs_human", "stopped")
# How an approval request was decided (the `decision` label of the approval-latency histogram).
DECISIONS = ("approved", "denied", "expired")
# What the bot depends on, by the name its error counter carries.
Dependency = Literal["kubernetes", "slurm", "agent", "prometheus", "audit", "slack"]
DEPENDENCIES: tuple[Dependency, ...] = (
    "kubernetes",
    "slurm",
    "agent",
    "prometheus",
    "audit",
    "slack",
)
_REASON_CHARS = 300


class Tally(Protocol):
    """Counters and timings of what happens (the web layer exports them to Prometheus)."""

    def step_outcome(self, *, action: str, result: str) -> None: ...

    def step_duration(self, *, runbook: str, action: str, outcome: str, seconds: float) -> None:
        """A started step ended: `seconds` from its first start to its end."""

    def approval_decided(self, *, runbook: str, decision: str, seconds: float) -> None:
        """An approval request was decided: `seconds` from the request to the decision."""

    def run_finished(self, *, runbook: str, status: str) -> None: ...

    def dependency_error(self, *, dependency: Dependency) -> None:
        """A call to a dependency failed (unreachable, timed out, refused, a bad answer)."""

    def attempt_cap_refused(self, *, runbook: str) -> None: ...

    def alert_unrouted(self) -> None: ...


class NoTally:
    """Counts nothing: the CLI commands and tests that do not read counters."""

    def step_outcome(self, *, action: str, result: str) -> None:
        return None

    def step_duration(self, *, runbook: str, action: str, outcome: str, seconds: float) -> None:
        return None

    def approval_decided(self, *, runbook: str, decision: str, seconds: float) -> None:
        return None

    def run_finished(self, *, runbook: str, status: str) -> None:
        return None

    def dependency_error(self, *, dependency: Dependency) -> None:
        return None

    def attempt_cap_refused(self, *, runbook: str) -> None:
        return None

    def alert_unrouted(self) -> None:
        return None


def _reason(draft: AuditDraft) -> str | None:
    for key in ("error", "reason"):
        value = draft.result.get(key)
        if isinstance(value, str) and value:
            return value[:_REASON_CHARS]
    return None


def step_recorded(tally: Tally, run: Run, draft: AuditDraft) -> None:
    """After an audit event is stored: when it records a step's outcome, one INFO line (a
    failure at WARNING) and one count."""
    result = STEP_OUTCOMES.get(draft.kind)
    if result is None or draft.action is None:
        return
    step_outcome(
        tally,
        run,
        step=draft.step or "-",
        action=draft.action,
        result=result,
        reason=_reason(draft),
    )


def step_outcome(
    tally: Tally, run: Run, *, step: str, action: str, result: str, reason: str | None = None
) -> None:
    tally.step_outcome(action=action, result=result)
    level = logging.WARNING if result in ("failed", "needs_human") else logging.INFO
    log.log(
        level,
        "step %s (%s) of run %s: %s",
        step,
        action,
        run.id,
        result,
        extra={
            "event": "step.outcome",
            "run_id": run.id,
            "incident_id": run.incident_id,
            "cluster": run.cluster,
            "runbook": run.runbook,
            "step": step,
            "action": action,
            "result": result,
            "reason": reason,
        },
    )


def step_ended(
    tally: Tally, run: Run, *, action: str, outcome: str, started: datetime | None, now: datetime
) -> None:
    """A step that started ended with `outcome` (one of STEP_ENDINGS): its duration, from its
    first start (a retried step counts its retries; a step never started counts nothing)."""
    if started is None:
        return
    seconds = max(0.0, (now - started).total_seconds())
    tally.step_duration(runbook=run.runbook, action=action, outcome=outcome, seconds=seconds)


def approval_decided(tally: Tally, run: Run, request: ApprovalRequest, *, now: datetime) -> None:
    """A request left pending: the time from the request to its decision (an expired one
    waited until it expired)."""
    status = request.status
    if status is ApprovalStatus.EXPIRED:
        now = min(now, request.expires_at)
    elif status not in (ApprovalStatus.APPROVED, ApprovalStatus.DENIED):
        return
    seconds = max(0.0, (now - request.created_at).total_seconds())
    tally.approval_decided(runbook=run.runbook, decision=status.value, seconds=seconds)


def run_finished(tally: Tally, run: Run) -> None:
    tally.run_finished(runbook=run.runbook, status=run.status.value)
    log.info(
        "run %s (%s) %s",
        run.id,
        run.runbook,
        run.status.value,
        extra={
            "event": "run.finished",
            "run_id": run.id,
            "incident_id": run.incident_id,
            "cluster": run.cluster,
            "runbook": run.runbook,
            "status": run.status.value,
            "reason": run.note[:_REASON_CHARS] or None,
        },
    )


class LeaderLog:
    """One line when this replica becomes the leader and one when it stops being it."""

    def __init__(self) -> None:
        self._leading: bool | None = None

    def check(self, leading: bool) -> None:
        if leading == self._leading:
            return
        first = self._leading is None
        self._leading = leading
        if leading:
            log.info("leader gained: this replica starts steps", extra={"event": "leader.gained"})
        elif not first:
            log.warning(
                "leader lost: this replica starts no step until it leads again",
                extra={"event": "leader.lost"},
            )
        else:
            log.info(
                "not the leader: another replica starts steps", extra={"event": "leader.standby"}
            )
