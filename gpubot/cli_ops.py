"""Break-glass CLI: incidents, runs, approve, deny, cancel, resume, over the shared store.

For when Slack is down. Decisions go through the same service methods as Slack's buttons
(the same approver groups, two-person rule and expiry) and land in the shared store; the
running `gpubot serve`'s leader reads them from the audit trail within about a second
(GpubotService.follow) and carries them out. This process never starts a step itself.
Who decides is the local account running the command, mapped to an approver identity by
`policy.operators` in the config: never something typed on the command line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gpubot.errors import ApprovalError, InputError

if TYPE_CHECKING:
    from gpubot.cli_ops_view import RunView
    from gpubot.config import OperatorSettings, Settings
    from gpubot.wiring import App

# The views (and the domain models under them) load with the commands, not with --help.

COMMANDS = ("incidents", "runs", "approve", "deny", "cancel", "resume")
READ_COMMANDS = ("incidents", "runs")  # the others write: a vote, a cancel, a resume
REFUSED = 1  # refused by policy: one line why; usage and config errors exit 2 (cli.main)
_PICKED_UP = "the running gpubot acts on it within about a second"
_WHO = (
    "Who decides is the local account running this command (its uid), as policy.operators "
    "in the config maps it to an approver identity; an unmapped account is refused. "
    "Exit codes: 0 done, 1 refused by policy, 2 usage or config error."
)


def add_parsers(sub: Any, config_arg: Callable[[argparse.ArgumentParser], None]) -> None:
    for name, noun in (("incidents", "incident"), ("runs", "run")):
        p = sub.add_parser(
            name,
            help=f"list {name}, or show one {noun} (break-glass, read-only)",
            description=f"Read {name} from the store `gpubot serve` uses: `{name}` or "
            f"`{name} list` lists the newest, `{name} show ID` shows one"
            + (
                " with its steps, who approved each, its approval requests and what holds it."
                if noun == "run"
                else " with its alerts and runs."
            ),
        )
        config_arg(p)
        p.add_argument(
            "verb",
            nargs="?",
            choices=["list", "show"],
            default="list",
            help=f"list (the default) or show one {noun}",
        )
        p.add_argument("id", nargs="?", metavar="ID", help=f"the {noun} to show")
        p.add_argument("--json", action="store_true", help="print JSON")
        p.add_argument("--limit", type=int, default=50, help="list at most N (default 50)")
        if noun == "incident":
            p.add_argument("--open", action="store_true", help="only open incidents")
        else:
            p.add_argument("--active", action="store_true", help="only runs not finished")

    for verb, what in (("approve", "Approve"), ("deny", "Deny")):
        p = sub.add_parser(
            verb,
            help=f"{verb} a pending step (break-glass, when Slack is down)",
            description=f"{what} a pending approval request, as the Slack button would: the "
            "step's approver group, the two-person rule (two distinct approvers, never the "
            "run's requester) and the request's expiry all apply. ID is the approval id "
            f"(apr-…) or a run id (its pending request). {_WHO}",
        )
        config_arg(p)
        p.add_argument("id", metavar="ID", help="approval id (apr-…) or run id (run-…)")
        if verb == "deny":
            p.add_argument("--reason", default="", help="why, recorded in the audit trail")

    p = sub.add_parser(
        "cancel",
        help="cancel a run (break-glass)",
        description="Cancel a run that has not finished: its open steps are cancelled and "
        "its approval requests closed; a step whose action is running now finishes, and "
        f"nothing starts after it. Allowed to the approver group of its current step. {_WHO}",
    )
    config_arg(p)
    p.add_argument("run", metavar="RUN", help="run id (run-…)")
    p.add_argument("--reason", default="", help="why, recorded in the audit trail")

    p = sub.add_parser(
        "resume",
        help="resume a run that waits for a human (break-glass)",
        description="A run paused for a human (needs_human: an interrupted step whose effect "
        "was unknown, or an action that asked for one) goes on: the paused step starts again "
        "from the top, through its approval gate, so a step that needs approval asks anew "
        f"(approve it with `gpubot approve RUN`). Allowed to the step's approver group. {_WHO}",
    )
    config_arg(p)
    p.add_argument("run", metavar="RUN", help="run id (run-…)")


def local_account() -> str:
    """The account this process runs as, from its real uid (not an environment variable)."""
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return f"uid:{os.getuid()}"


def operator(settings: Settings, account: str) -> OperatorSettings:
    """The approver `account` stands for; ApprovalError (a refusal) when it is not mapped."""
    found = settings.policy.operators.get(account)
    if found is None:
        raise ApprovalError(
            f"local account {account!r} is not in policy.operators; "
            "map it to an approver identity in the config to decide from the CLI"
        )
    return found


def build_cli_app(settings: Settings, **overrides: Any) -> App:
    """The break-glass service (wiring.build_breakglass_app); `overrides` go to build_app
    (a test's clock or store)."""
    from gpubot.wiring import build_breakglass_app

    return build_breakglass_app(settings, **overrides)


async def run_ops(args: argparse.Namespace, *, app: App, account: str | None = None) -> int:
    """One break-glass command against `app` (the CLI's, or a test's on a fake clock)."""
    try:
        if args.command == "incidents":
            return await _incidents(app, args)
        if args.command == "runs":
            return await _runs(app, args)
        return await _decide(app, args, account if account is not None else local_account())
    except ApprovalError as exc:
        from gpubot.cli_ops_view import plain

        print(f"gpubot: refused: {plain(str(exc))}", file=sys.stderr)
        return REFUSED


async def _incidents(app: App, args: argparse.Namespace) -> int:
    from gpubot.cli_ops_view import (
        alert_json,
        incident_detail_lines,
        incident_json,
        incident_lines,
        run_json,
    )
    from gpubot.domain.incidents import IncidentStatus

    store = app.store
    if args.verb == "list":
        status = IncidentStatus.OPEN if args.open else None
        found = await store.list_incidents(status=status, limit=_limit(args))
        _out(args, [incident_json(i) for i in found], lambda: incident_lines(found))
        return 0
    incident = await store.get_incident(_id(args, "incident"))
    alerts = await store.alerts_for(incident.id)
    runs = await store.list_runs(incident_id=incident.id)
    data = {
        "incident": incident_json(incident, full=True),
        "alerts": [alert_json(a) for a in alerts],
        "runs": [run_json(r) for r in runs],
    }
    _out(args, data, lambda: incident_detail_lines(incident, alerts, runs))
    return 0


async def _runs(app: App, args: argparse.Namespace) -> int:
    from gpubot.cli_ops_view import run_json, run_lines
    from gpubot.domain.runs import RunStatus

    store = app.store
    if args.verb == "list":
        statuses = [s for s in RunStatus if not s.finished] if args.active else None
        found = (await store.list_runs(statuses=statuses))[-_limit(args) :][::-1]
        _out(args, [run_json(r) for r in found], lambda: run_lines(found))
        return 0
    view = await run_view(app, _id(args, "run"))
    _out(args, view.as_json(), view.lines)
    return 0


async def run_view(app: App, run_id: str) -> RunView:
    from gpubot.cli_ops_view import RunView

    run, steps = await app.store.run_with_steps(run_id)
    return RunView(
        run=run,
        steps=steps,
        approvals=await app.store.approvals_for(run.id),
        runbook=app.service.read.runbook(run.runbook),
        now=app.service.read.now(),
    )


async def _decide(app: App, args: argparse.Namespace, account: str) -> int:
    from gpubot.cli_ops_view import plain

    who = operator(app.settings, account)
    via = {"via": "cli", "account": account}
    service = app.service
    if args.command in ("approve", "deny"):
        approval_id = await _approval_id(app, args.id)
        outcome = await service.vote(
            approval_id=approval_id,
            user=who.user,
            decision="approve" if args.command == "approve" else "deny",
            user_groups=who.usergroups,
            via=via,
            reason=getattr(args, "reason", ""),
        )
        done = outcome.request.status.value != "pending"
        tail = f"; {_PICKED_UP}" if done else ""
        print(f"{plain(outcome.message)} ({approval_id}, as {who.user}){tail}")
        return 0
    if args.command == "cancel":
        result = await service.cancel(
            run_id=args.run, user=who.user, reason=args.reason, user_groups=who.usergroups, via=via
        )
    else:
        result = await service.resume(
            run_id=args.run, user=who.user, user_groups=who.usergroups, via=via
        )
    print(f"{plain(result.message)} (as {who.user}); {_PICKED_UP}")
    return 0


async def _approval_id(app: App, given: str) -> str:
    """An approval id as given, or a run's pending request (the newest) for a run id."""
    if not given.startswith("run-"):
        return given
    from gpubot.domain.approvals import ApprovalStatus

    await app.store.get_run(given)  # NotFoundError (exit 2) for a wrong id
    pending = [
        a for a in await app.store.approvals_for(given) if a.status is ApprovalStatus.PENDING
    ]
    if not pending:
        raise ApprovalError(f"run {given} has no pending approval request")
    return pending[-1].id


def _id(args: argparse.Namespace, noun: str) -> str:
    if not args.id:
        raise InputError(f"{args.command} show: which {noun}? (give its id)")
    return str(args.id)


def _limit(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise InputError("--limit must be at least 1")
    return int(args.limit)


def _out(args: argparse.Namespace, data: Any, lines: Callable[[], list[str]]) -> None:
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print("\n".join(lines()))
