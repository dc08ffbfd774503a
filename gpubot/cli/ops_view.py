"""How `gpubot incidents` and `gpubot runs` show the store: JSON shapes and terminal lines.

Everything shown comes from outside at some point (alert labels, node names, notes), so
text output escapes control characters (no terminal escape sequence gets through) and JSON
output is `json.dumps`, which escapes them by itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gpubot.domain.control.approvals import ApprovalRequest, ApprovalStatus
from gpubot.domain.incidents.correlation import AlertRecord, Incident
from gpubot.domain.runbooks.runs import Run, RunStatus, StepState, StepStatus
from gpubot.domain.runbooks.spec import Runbook
from gpubot.domain.terminal import safe

_MENTION = re.compile(r"<@([A-Z0-9]+)>")


def plain(message: str) -> str:
    """A service message for the terminal: `<@U1>` (Slack's mention) reads as U1."""
    return safe(_MENTION.sub(r"\1", message))


def _ts(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


# -- incidents ------------------------------------------------------------------------


def incident_json(i: Incident, *, full: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": i.id,
        "status": i.status.value,
        "alertname": i.alertname,
        "cluster": i.cluster,
        "node": i.node,
        "severity": i.severity,
        "summary": i.summary,
        "created_at": _ts(i.created_at),
        "updated_at": _ts(i.updated_at),
        "resolved_at": _ts(i.resolved_at),
    }
    if full:
        out["labels"] = dict(i.labels)
        out["annotations"] = dict(i.annotations)
    return out


def alert_json(a: AlertRecord) -> dict[str, Any]:
    return {
        "fingerprint": a.fingerprint,
        "status": a.status,
        "starts_at": _ts(a.starts_at),
        "ends_at": _ts(a.ends_at),
        "labels": dict(a.labels),
    }


def incident_lines(incidents: Sequence[Incident]) -> list[str]:
    if not incidents:
        return ["no incidents"]
    rows = [("ID", "STATUS", "ALERT", "CLUSTER", "NODE", "OPENED", "SUMMARY")]
    rows += [
        (
            i.id,
            i.status.value,
            i.alertname,
            i.cluster,
            i.node or "-",
            i.created_at.strftime("%Y-%m-%d %H:%M"),
            i.summary[:60],
        )
        for i in incidents
    ]
    return _table(rows)


def incident_detail_lines(
    i: Incident, alerts: Sequence[AlertRecord], runs: Sequence[Run]
) -> list[str]:
    lines = [f"incident {safe(i.id)}  {i.status.value}"]
    for key, value in incident_json(i).items():
        if key not in ("id", "status") and value is not None:
            lines.append(f"  {key}: {safe(value)}")
    lines += [f"  label {safe(k)}={safe(v)}" for k, v in sorted(i.labels.items())]
    lines.append(f"alerts ({len(alerts)}):")
    lines += [
        f"  {safe(a.fingerprint)}  {safe(a.status)}  since {_ts(a.starts_at)}" for a in alerts
    ]
    lines.append(f"runs ({len(runs)}):")
    lines += [f"  {safe(r.id)}  {safe(r.runbook)}  {r.status.value}  {safe(r.note)}" for r in runs]
    return lines


# -- runs -----------------------------------------------------------------------------


def run_json(r: Run) -> dict[str, Any]:
    return {
        "id": r.id,
        "runbook": r.runbook,
        "status": r.status.value,
        "incident_id": r.incident_id,
        "cluster": r.cluster,
        "target": r.target,
        "requested_by": r.requested_by,
        "dry_run": r.dry_run,
        "note": r.note,
        "created_at": _ts(r.created_at),
        "updated_at": _ts(r.updated_at),
    }


def approval_json(a: ApprovalRequest, *, now: datetime) -> dict[str, Any]:
    return {
        "id": a.id,
        "step": a.step_id,
        "level": a.level,
        "group": a.group,
        "status": a.status.value,
        "requested_by": a.requested_by,
        "created_at": _ts(a.created_at),
        "expires_at": _ts(a.expires_at),
        "expired": a.status is ApprovalStatus.PENDING and now >= a.expires_at,
        "needed": a.needed,
        "votes": [{"user": v.user, "decision": v.decision, "at": _ts(v.at)} for v in a.votes],
    }


@dataclass(frozen=True)
class RunView:
    """A run with what `runs show` tells: steps, approvals, who approved, what is held."""

    run: Run
    steps: Sequence[StepState]
    approvals: Sequence[ApprovalRequest]
    runbook: Runbook | None  # None when the runbook is no longer loaded
    now: datetime

    def approved_by(self, step_id: str) -> list[str]:
        for a in reversed(self.approvals):
            if a.step_id == step_id and a.status is ApprovalStatus.APPROVED:
                return list(a.approvers)
        return []

    def held(self) -> dict[str, Any] | None:
        """What keeps the run from going on by itself, and why (None when nothing does)."""
        waiting = (StepStatus.HELD, StepStatus.NEEDS_HUMAN, StepStatus.WAITING_APPROVAL)
        steps = [{"step": s.step_id, "status": s.status.value, "why": s.error} for s in self.steps]
        steps = [s for s in steps if s["status"] in waiting]
        paused = (RunStatus.HELD, RunStatus.NEEDS_HUMAN, RunStatus.WAITING_APPROVAL)
        if self.run.status not in paused and not steps:
            return None
        return {"status": self.run.status.value, "reason": self.run.note, "steps": steps}

    def as_json(self) -> dict[str, Any]:
        return {
            "run": run_json(self.run),
            "steps": [self._step_json(s) for s in self.steps],
            "approvals": [approval_json(a, now=self.now) for a in self.approvals],
            "held": self.held(),
        }

    def _step_json(self, s: StepState) -> dict[str, Any]:
        step = _step_of(self.runbook, s.step_id)
        return {
            "id": s.step_id,
            "action": step.action if step else None,
            "approval": step.approval if step else None,
            "status": s.status.value,
            "attempts": s.attempts,
            "error": s.error,
            "approved_by": self.approved_by(s.step_id),
            "started_at": _ts(s.started_at),
            "finished_at": _ts(s.finished_at),
        }

    def lines(self) -> list[str]:
        r = self.run
        lines = [f"run {safe(r.id)}  {safe(r.runbook)}  {r.status.value}"]
        for key in ("incident_id", "cluster", "target", "requested_by", "note", "created_at"):
            value = run_json(r)[key]
            if value not in (None, ""):
                lines.append(f"  {key}: {safe(value)}")
        if r.dry_run:
            lines.append("  dry run: plans and records only")
        rows = [("STEP", "ACTION", "APPROVAL", "STATUS", "APPROVED BY", "NOTE")]
        for s in self.steps:
            j = self._step_json(s)
            who = "+".join(j["approved_by"]) or "-"
            rows.append(
                (s.step_id, j["action"] or "?", j["approval"] or "?", s.status.value, who, s.error)
            )
        lines += ["", *_table(rows)]
        if self.approvals:
            lines.append("")
            lines.append("approvals:")
        for a in self.approvals:
            j = approval_json(a, now=self.now)
            state = "expired" if j["expired"] else a.status.value
            votes = ", ".join(f"{v.user} {v.decision}" for v in a.votes) or "no votes"
            lines.append(
                f"  {safe(a.id)}  step {safe(a.step_id)}  {a.level}  group {safe(a.group)}  "
                f"{state}  ({safe(votes)}; expires {_ts(a.expires_at)})"
            )
        if (held := self.held()) is not None:
            lines.append("")
            lines.append(f"held: {held['status']}: {safe(held['reason']) or '-'}")
            lines += [
                f"  step {safe(h['step'])} {h['status']}: {safe(h['why'])}" for h in held["steps"]
            ]
        return lines


def run_lines(runs: Sequence[Run]) -> list[str]:
    if not runs:
        return ["no runs"]
    rows = [("ID", "RUNBOOK", "STATUS", "INCIDENT", "TARGET", "CREATED", "NOTE")]
    rows += [
        (
            r.id,
            r.runbook,
            r.status.value,
            r.incident_id or "-",
            r.target or "-",
            r.created_at.strftime("%Y-%m-%d %H:%M"),
            r.note[:60],
        )
        for r in runs
    ]
    return _table(rows)


def _step_of(runbook: Runbook | None, step_id: str) -> Any:
    if runbook is None:
        return None
    return next((s for s in runbook.steps if s.id == step_id), None)


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    cells = [[safe(c) for c in row] for row in rows]
    widths = [min(40, max(len(r[i]) for r in cells)) for i in range(len(cells[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
