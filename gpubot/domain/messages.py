"""What the bot says in an incident thread, as neutral message blocks (pure functions)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gpubot.domain.control.approvals import ApprovalRequest
from gpubot.domain.control.audit import SHORT_HASH, AuditEvent, ChainHead
from gpubot.domain.control.safety_caps import BlastRadius
from gpubot.domain.incidents.correlation import Incident
from gpubot.domain.results import Code, Fields, Message, Table, Text
from gpubot.domain.runbooks.plans import Plan
from gpubot.domain.runbooks.runs import Run, StepState


def _short(value: Mapping[str, Any], limit: int = 120) -> str:
    text = json.dumps(dict(value), default=str, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def incident_root(incident: Incident, *, state: str) -> Message:
    pairs = [
        ("Severity", incident.severity),
        ("Cluster", incident.cluster),
        ("Node", incident.node or "-"),
        ("GPU", incident.labels.get("gpu", "-")),
        ("State", state),
    ]
    if incident.generator_url:
        pairs.append(("Source", incident.generator_url))
    if runbook_url := incident.annotations.get("runbook_url"):
        pairs.append(("Runbook", runbook_url))
    title = (
        f"[{incident.severity.upper()}] {incident.alertname}: {incident.summary} ({incident.id})"
    )
    return Message(title, (Fields(tuple(pairs)),), kind="incident")


def plan_message(plan: Plan) -> Message:
    rows = []
    for s in plan.steps:
        run = {True: "yes", False: "no", None: "at run time"}[s.will_run]
        rows.append((s.id, s.action, s.approval, run, s.problem or s.summary))
    blocks: list[Any] = [
        Text(plan.description or f"Runbook {plan.runbook}"),
        Fields(
            (
                ("Runbook", plan.runbook),
                ("Cluster", plan.cluster),
                ("Target", plan.target or "-"),
                *((("Pool", plan.pool.described),) if plan.pool is not None else ()),
            )
        ),
        Table(("step", "action", "approval", "runs", "what it would do"), tuple(rows)),
    ]
    if plan.warnings:
        blocks.append(Text("Before anything runs: " + "; ".join(plan.warnings)))
    if plan.problems:
        blocks.append(Text("Problems: " + "; ".join(plan.problems)))
    return Message(f"Plan: {plan.runbook}", tuple(blocks), kind="plan")


def approval_message(
    run: Run, step_id: str, request: ApprovalRequest, summary: str, *, group_empty: bool = False
) -> Message:
    who = "two approvers" if request.level == "two-person" else "one approver"
    warning = (
        (
            Text(
                f"Nobody is in approver group '{request.group}' yet: configure "
                f"policy.groups.{request.group}."
            ),
        )
        if group_empty
        else ()
    )
    return Message(
        f"Approval needed: step `{step_id}` of {run.runbook}",
        (
            *warning,
            Text(summary),
            Fields(
                (
                    ("Needs", f"{who} from group '{request.group}'"),
                    ("Expires", request.expires_at.strftime("%Y-%m-%d %H:%M:%S UTC")),
                    ("Approval id", request.id),
                )
            ),
        ),
        kind="approval",
    )


def step_key(run: Run, step_id: str) -> str:
    return f"{run.runbook} > {step_id}"


def step_message(run: Run, state: StepState, *, action: str, text: str) -> Message:
    key = step_key(run, state.step_id)
    return Message(
        f"{key} ({action}): {state.status.value}", (Text(text),), kind="step", step_key=key
    )


def progress(run: Run, step_id: str, body: str, *, mentions: tuple[str, ...] = ()) -> Message:
    """A running step's own words for the thread; a chat joins them to the step's message."""
    key = step_key(run, step_id)
    return Message(key, (Text(body),), mentions, kind="progress", step_key=key)


def run_summary(
    run: Run,
    states: Sequence[StepState],
    actors: Mapping[str, str],
    *,
    standing: Sequence[Text] = (),
) -> Message:
    """The run's end: each step's outcome, then (`standing`) where its node or workload
    stands now and what releases it."""
    rows = tuple(
        (s.step_id, s.status.value, actors.get(s.step_id, "-"), s.error or _short(s.output))
        for s in states
    )
    return Message(
        f"Run {run.id} ({run.runbook}) {run.status.value}" + (f": {run.note}" if run.note else ""),
        (Table(("step", "status", "by", "result"), rows), *standing),
        kind="run",
    )


def audit_summary(events: Sequence[AuditEvent], *, head: ChainHead | None = None) -> Message:
    """The incident's events; with `head` (the whole chain's, read after the run ended), an
    anchor outside the database that `gpubot audit verify` can later be held to."""
    rows = tuple(
        (e.ts.strftime("%H:%M:%S"), e.actor, e.kind, e.step or "-", e.target or "-") for e in events
    )
    table = Table(("time", "who", "what", "step", "target"), rows)
    if head is None:
        chain = events[-1].hash[:SHORT_HASH] if events else "-"
        return Message(
            f"Audit trail ({len(events)} events, chain head {chain})", (table,), kind="audit"
        )
    short = head.hash[:SHORT_HASH]
    check = f"gpubot audit verify --min-seq {head.seq} --expect-head {short}"
    return Message(
        f"Audit trail ({len(events)} events, chain head seq {head.seq} / {short})",
        (table, Text(f"To check the trail still reaches this point later: `{check}`")),
        kind="audit",
    )


HELD_ROWS = 40  # a storm summary lists this many held steps, then counts the rest


def held_summary(held: Sequence[tuple[str, str, str, str]], *, cap: BlastRadius) -> Message:
    """One message for every step the blast-radius cap holds, edited as the storm goes on:
    how many, on which nodes (node, runbook > step, incident, reason), what releases them."""
    if not held:
        return Message(
            "Blast radius: no steps are held",
            (Text("Every held step has gone ahead or ended."),),
            kind="held",
        )
    nodes = sorted({node for node, *_ in held})
    rows = tuple(held[:HELD_ROWS])
    more = len(held) - len(rows)
    release = (
        "They go ahead by themselves, one per freed slot, when GPU nodes come back into "
        "service (uncordoned), nodes join the fleet, or running drains and runs end. To let "
        f"more go at once, raise policy.blast_radius (now {cap.max_cordoned_count} nodes or "
        f"{cap.max_cordoned_fraction:.0%} of the fleet, {cap.max_concurrent_drains} drain(s) "
        "at a time); to stop one, cancel its run."
    )
    blocks: list[Any] = [
        Text(
            f"{len(held)} step(s) held on {len(nodes)} node(s): {', '.join(nodes[:HELD_ROWS])}"
            + (f" and {len(nodes) - HELD_ROWS} more" if len(nodes) > HELD_ROWS else "")
        ),
        Table(("node", "step", "incident", "why"), rows),
    ]
    if more:
        blocks.append(Text(f"… and {more} more held step(s)"))
    blocks.append(Text(release))
    return Message(f"Blast radius: {len(held)} step(s) held", tuple(blocks), kind="held")


def text(title: str, body: str = "", *, standing: Sequence[Text] = ()) -> Message:
    return Message(title, ((Text(body),) if body else ()) + tuple(standing))


def code(title: str, body: str) -> Message:
    return Message(title, (Code(body),))
