"""An owner's "Object — keep it" click: checked, then recorded durably in the audit trail."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gpubot.actions.workloads import RECLAIM_ACTION
from gpubot.domain.fleet.reclaim import OBJECTION_KIND, may_object
from gpubot.domain.runbooks.action_names import Action
from gpubot.domain.runbooks.runs import Run, StepState, StepStatus
from gpubot.engine.audit_trail import AuditTrail
from gpubot.engine.deps import Engine
from gpubot.errors import ApprovalError, NotFoundError, ObjectionClosed

GRACE_ACTION = Action.WORKLOAD_GRACE
NOTICE_ACTION = Action.WORKLOAD_NOTIFY_OWNER
# Is this Slack user in this Slack user group? (The Slack adapter asks Slack, with a cache.)
MemberOf = Callable[[str], Awaitable[bool]]


@dataclass(frozen=True)
class Objection:
    run_id: str
    user: str
    workload: str  # what is kept, for the reply and the edited notice


async def record_objection(
    e: Engine, *, run_id: str, user: str, member_of: MemberOf | None = None
) -> Objection:
    """Accept one objection, or raise ApprovalError with the one line to show the clicker.

    The grace step reads the event back (also after a restart) and ends the run, kept; the
    audit event is the objection's only record, so it never depends on this process.
    """
    try:
        run = await e.store.get_run(run_id)
    except NotFoundError:
        raise ApprovalError("This reclamation does not exist.") from None
    runbook = e.runbooks.get(run.runbook)
    if runbook is None:
        raise ApprovalError(f"Runbook {run.runbook} is no longer loaded; nothing to object to.")
    by_action = {runbook.step(s.step_id).action: s for s in await e.store.steps(run.id)}
    grace = by_action.get(GRACE_ACTION)
    if grace is None:
        raise ApprovalError("This run has no grace period to object in.")
    notice = by_action.get(NOTICE_ACTION)
    workload = str((notice.output if notice else {}).get("workload", "the workload"))
    earlier = [ev for ev in await e.store.events(run_id=run.id) if ev.kind == OBJECTION_KIND]
    if earlier:
        raise ObjectionClosed(f"Already kept: <@{earlier[0].actor}> objected first.")
    if run.status.finished or grace.status.finished:
        raise ObjectionClosed(_too_late(run, grace, by_action.get(RECLAIM_ACTION)))
    reclaim = next((s for s in runbook.steps if s.action == RECLAIM_ACTION), None)
    group = (reclaim.approvers if reclaim else None) or e.policy.default_group
    approvers = e.policy.groups.get(group)
    owner = notice.output if notice is not None else {}
    owner_user = str(owner.get("owner_user") or "") or None
    owner_group = str(owner.get("owner_group") or "") or None
    asked = {*(approvers.usergroups if approvers else ()), *([owner_group] if owner_group else [])}
    mine = [g for g in sorted(asked) if member_of is not None and await member_of(g)]
    if not may_object(
        user=user,
        owner_user=owner_user,
        owner_group=owner_group,
        approvers=approvers,
        user_groups=mine,
    ):
        who = owner.get("owner") or "the owner"
        raise ApprovalError(
            f"Only {who} or an approver (group '{group}') may object to this reclamation."
        )
    await AuditTrail(e.store, e.clock, e.tally).record(
        OBJECTION_KIND,
        actor=user,
        incident_id=run.incident_id,
        run_id=run.id,
        step=grace.step_id,
        action=GRACE_ACTION,
        target=run.target,
        result={"kept_by": user, "workload": workload, "accepted": True},
        reason="objection during the grace period",
        dry_run=run.dry_run,
    )
    return Objection(run.id, user, workload)


def _too_late(run: Run, grace: StepState, reclaim: StepState | None) -> str:
    if reclaim is not None and reclaim.status is StepStatus.SUCCEEDED:
        return "Too late: it was already reclaimed. " + str(reclaim.output.get("restore", ""))
    if run.status.finished:
        note = f" ({run.note})" if run.note else ""
        return f"Too late: this reclamation already ended, {run.status.value}{note}."
    if reclaim is not None and reclaim.status is StepStatus.WAITING_APPROVAL:
        return (
            "Too late: the grace period is over and the reclamation waits for approval; "
            "ask an approver to Deny it."
        )
    return "Too late: the grace period is over; the reclamation is going ahead."
