"""Break-glass CLI: incidents, runs, approve, deny, cancel, resume, over the shared store.

For when Slack is down. A decision is a vote signed with the operator's own SSH key
(`ssh-keygen -Y sign -n gpubot-vote`), stored in the shared store; the running `gpubot
serve`'s leader checks the signature against the operator keys of its own config, and only
then decides as the identity that key stands for, through the same service methods as Slack's
buttons (approver groups, two-person rule, expiry). This process decides nothing and never
starts a step: its environment and its --config cannot make anyone someone else.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpubot.errors import ApprovalError, InputError

if TYPE_CHECKING:
    from gpubot.cli.ops_view import RunView
    from gpubot.config import Settings
    from gpubot.wiring import App

# The views (and the domain models under them) load with the commands, not with --help.

COMMANDS = ("incidents", "runs", "approve", "deny", "cancel", "resume")
READ_COMMANDS = ("incidents", "runs")  # the others write: a vote, a cancel, a resume
REFUSED = 1  # refused by policy: one line why; usage and config errors exit 2 (cli.main)
_WHO = (
    "Who decides is the holder of an SSH key listed in policy.operator_keys of the config "
    "`gpubot serve` runs with: the vote is signed with it (ssh-keygen -Y sign -n gpubot-vote; "
    "--key, else ~/.ssh/id_ed25519, id_ecdsa or id_rsa), and the running server checks the "
    "signature against its own keys before it counts the vote; the environment and this "
    "command's --config change nobody's identity. An unsigned vote, or one signed by a key "
    "the server does not list, is refused. Exit codes: 0 done (or stored, not yet counted), "
    "1 refused, 2 usage or config error."
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
        _signing_args(p)

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
    _signing_args(p)

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
    _signing_args(p)


def _signing_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--key",
        type=Path,
        metavar="FILE",
        help="your SSH key (private, or the .pub of a key held by ssh-agent or a token); "
        "default ~/.ssh/id_ed25519, id_ecdsa or id_rsa",
    )
    p.add_argument(
        "--write-message",
        type=Path,
        metavar="FILE",
        help="only write the vote to sign to FILE, for signing elsewhere: "
        "ssh-keygen -Y sign -f KEY -n gpubot-vote FILE (writes FILE.sig)",
    )
    p.add_argument("--message", type=Path, metavar="FILE", help="a vote written by --write-message")
    p.add_argument(
        "--signature", type=Path, metavar="FILE", help="its signature (FILE.sig of ssh-keygen)"
    )
    p.add_argument(
        "--wait",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="how long to wait for the running gpubot to count the vote (default 15)",
    )


def local_account() -> str:
    """The account this process runs as, from its real uid (not an environment variable)."""
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return f"uid:{os.getuid()}"


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
        from gpubot.cli.vote import decide

        return await decide(app, args, account if account is not None else local_account())
    except ApprovalError as exc:
        from gpubot.cli.ops_view import plain

        print(f"gpubot: refused: {plain(str(exc))}", file=sys.stderr)
        return REFUSED


async def _incidents(app: App, args: argparse.Namespace) -> int:
    from gpubot.cli.ops_view import (
        alert_json,
        incident_detail_lines,
        incident_json,
        incident_lines,
        run_json,
    )
    from gpubot.domain.incidents.correlation import IncidentStatus

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
    from gpubot.cli.ops_view import run_json, run_lines
    from gpubot.domain.runbooks.runs import RunStatus

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
    from gpubot.cli.ops_view import RunView

    run, steps = await app.store.run_with_steps(run_id)
    return RunView(
        run=run,
        steps=steps,
        approvals=await app.store.approvals_for(run.id),
        runbook=app.service.read.runbook(run.runbook),
        now=app.service.read.now(),
    )


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
