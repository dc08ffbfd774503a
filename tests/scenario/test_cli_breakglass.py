"""Break-glass CLI beside a serving app on one database (SQLite and PostgreSQL): decisions taken
with `gpubot approve/deny/cancel/resume` obey the Slack rules and reach the serving app's
executor through the store, and `incidents`/`runs` show what is there."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from slack_harness import SlackHarness, slack_harness
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from gpubot.backends.recording import RecordingNotifier
from gpubot.backends.store import SqlStore, open_store
from gpubot.cli import parser
from gpubot.cli_ops import build_cli_app, run_ops
from gpubot.config import load_settings
from gpubot.domain.alerts import AlertmanagerPayload
from gpubot.domain.approvals import ApprovalStatus, Vote
from gpubot.domain.runs import RunStatus, StepStatus
from gpubot.wiring import App, build_app

PG_URL = os.environ.get("GPUBOT_TEST_PG_URL", "postgresql+psycopg://root@127.0.0.1:5432/test")
NODE = "gpu-node-05"
GROUPS = {"oncall": {"users": ["U1", "U2"], "usergroups": ["S0ONCALL"]}}
OPERATORS = {
    "alice": "U1",
    "bob": {"user": "U2"},
    "carol": {"user": "U5", "usergroups": ["S0ONCALL"]},  # in the group through its user group
    "eve": "U7",  # mapped, but in no approver group
}
RUNBOOK = """\
name: breakglass
triggers: [{command: breakglass}]
params:
  node: {type: node, required: true}
target: node
steps:
  - {id: quarantine, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
  - id: release
    action: node.uncordon
    args: {node: "{{ params.node }}"}
    approval: %s
    approvers: oncall
"""


@dataclass
class Database:
    """Where both processes' stores live: a SQLite file, or a fresh PostgreSQL schema."""

    url: str
    schema: str | None = None

    def open(self) -> SqlStore:
        return open_store(self.url, schema=self.schema)


def _postgres() -> str:
    engine = create_engine(PG_URL, connect_args={"connect_timeout": 3})
    try:
        with engine.connect() as conn:
            conn.execute(text("select 1"))
    except OperationalError as exc:
        reason = f"PostgreSQL is not reachable at {PG_URL}: {exc.orig}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    finally:
        engine.dispose()
    return PG_URL


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        yield Database(url=f"sqlite:///{tmp_path / 'shared.db'}")
        return
    db = Database(url=_postgres(), schema=f"t_{uuid.uuid4().hex[:12]}")
    yield db
    cleanup = create_engine(db.url)
    with cleanup.begin() as conn:
        conn.execute(text(f'DROP SCHEMA IF EXISTS "{db.schema}" CASCADE'))
    cleanup.dispose()


@pytest.fixture(autouse=True)
def _no_env_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("GPUBOT_", "SLACK_")):
            monkeypatch.delenv(name)


@dataclass
class BreakGlass:
    """The serving app (Slack harness) and a CLI process's app over the same database."""

    h: SlackHarness
    cli: App
    out: Callable[[], tuple[str, str]]

    async def gpubot(self, *argv: str, account: str = "alice") -> tuple[int, str, str]:
        """One CLI command as `account`: exit code, stdout, stderr."""
        self.out()
        code = await run_ops(parser().parse_args(argv), app=self.cli, account=account)
        stdout, stderr = self.out()
        return code, stdout, stderr

    async def serve_follows(self) -> None:
        """What the serving process's ticker does every second: follow(), then let it work."""
        await self.h.app.service.follow()
        await self.h.settle()

    async def waiting_run(self, requested_by: str = "U9") -> str:
        _plan, run = await self.h.app.service.start_command_run(
            runbook="breakglass", args={"node": NODE}, requested_by=requested_by, cluster="sim"
        )
        assert run is not None
        await self.h.settle()
        await self.serve_follows()  # the first follow only notes where the audit trail is
        assert (await self.h.app.store.get_run(run.id)).status is RunStatus.WAITING_APPROVAL
        return run.id

    async def clicked(self, kind: str, count: int = 1) -> None:
        """A click is handled after Slack's ack: wait until its audit event (the listener's
        last store write) is there, so no listener still uses the store when the test ends."""
        for _ in range(1000):
            if len(await self.events(kind)) >= count:
                await self.h.settle()
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"the click's {kind} event never reached the store")

    async def steps(self, run_id: str) -> dict[str, str]:
        return {s.step_id: s.status.value for s in await self.h.app.store.steps(run_id)}

    async def events(self, kind: str) -> list[Any]:
        return [e for e in await self.h.app.store.events() if e.kind == kind]


@contextlib.asynccontextmanager
async def breakglass(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    database: Database,
    *,
    approval: str = "required",
) -> AsyncIterator[BreakGlass]:
    rb = tmp_path / "runbooks"
    rb.mkdir()
    (rb / "breakglass.yaml").write_text(RUNBOOK % approval)
    served, used = database.open(), database.open()
    try:
        async with slack_harness(tmp_path, monkeypatch, runbook_dirs=[rb], store=served) as h:
            settings = load_settings(
                None,
                store={"url": database.url},
                slack={"mode": "off"},
                policy={"groups": GROUPS, "operators": OPERATORS},
                runbooks={"dirs": [str(rb)]},
            )
            cli = build_cli_app(settings, clock=h.clock, store=used)

            def out() -> tuple[str, str]:
                captured = capsys.readouterr()
                return captured.out, captured.err

            try:
                yield BreakGlass(h=h, cli=cli, out=out)
            finally:
                await cli.aclose()
    finally:  # also when an app could not be built: no connection left to the collector
        served.dispose()
        used.dispose()


@pytest.fixture
async def bg(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    database: Database,
) -> AsyncIterator[BreakGlass]:
    async with breakglass(tmp_path, monkeypatch, capsys, database) as b:
        yield b


def _one_refusal(code: int, stderr: str, fragment: str) -> None:
    assert code == 1
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("gpubot: refused: ")
    assert fragment in lines[0]


async def test_cli_approval_runs_the_step_on_the_serving_app(bg: BreakGlass) -> None:
    """The CLI records the vote and starts nothing itself; the serving app's follow() (its
    one-second loop) reads the vote from the store and runs the step, as the approver."""
    run_id = await bg.waiting_run()
    code, stdout, _ = await bg.gpubot("approve", run_id)
    assert code == 0
    assert "Approved by U1" in stdout
    assert (await bg.steps(run_id))["release"] == "waiting_approval"  # the CLI ran nothing
    assert bg.h.sim.snapshot().node(NODE).unschedulable

    await bg.serve_follows()
    assert (await bg.steps(run_id))["release"] == "succeeded"
    assert not bg.h.sim.snapshot().node(NODE).unschedulable
    [vote] = await bg.events("approval.vote")
    assert vote.actor == "U1"
    assert vote.result["via"] == "cli"
    assert vote.result["account"] == "alice"
    [started] = [e for e in await bg.events("step.started") if e.step == "release"]
    assert started.actor == "U1"


async def test_two_person_rule_across_slack_and_cli(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    database: Database,
) -> None:
    """A Slack click and a CLI vote are two approvers; the same person twice (Slack then
    CLI) is one, and the requester never counts."""
    async with breakglass(tmp_path, monkeypatch, capsys, database, approval="two-person") as b:
        run_id = await b.waiting_run(requested_by="U2")
        [approval_id] = b.h.approval_ids()
        code, _, err = await b.gpubot("approve", approval_id, account="bob")
        _one_refusal(code, err, "requester of a run cannot approve")

        await b.h.click(approval_id, user="U1")
        await b.clicked("approval.vote")
        code, _, err = await b.gpubot("approve", approval_id, account="alice")
        _one_refusal(code, err, "already voted")
        code, stdout, _ = await b.gpubot("approve", approval_id, account="carol")
        assert code == 0, stdout
        assert "Approved by U1 and U5" in stdout

        await b.serve_follows()
        assert (await b.steps(run_id))["release"] == "succeeded"
        approvers = [(e.actor, e.result.get("via")) for e in await b.events("approval.vote")]
        assert approvers == [("U1", None), ("U5", "cli")]


async def test_unmapped_or_outside_account_is_refused(bg: BreakGlass) -> None:
    """An OS account missing from policy.operators is refused with one line and changes
    nothing; a mapped one outside the approver group is refused like a Slack click."""
    run_id = await bg.waiting_run()
    code, _, err = await bg.gpubot("approve", run_id, account="mallory")
    _one_refusal(code, err, "local account 'mallory' is not in policy.operators")
    assert await bg.events("approval.vote") == []
    assert await bg.events("approval.refused") == []

    code, _, err = await bg.gpubot("approve", run_id, account="eve")
    _one_refusal(code, err, "not in the approver group 'oncall'")
    [refused] = await bg.events("approval.refused")
    assert (refused.actor, refused.result["account"]) == ("U7", "eve")
    code, _, err = await bg.gpubot("cancel", run_id, account="eve")
    _one_refusal(code, err, "not in the approver group 'oncall'")
    assert (await bg.h.app.store.get_run(run_id)).status is RunStatus.WAITING_APPROVAL


async def test_expired_approval_is_refused(bg: BreakGlass) -> None:
    """Past policy.approval_expiry (30 min) the CLI's approve is refused, as a click is."""
    run_id = await bg.waiting_run()
    [approval_id] = bg.h.approval_ids()
    bg.h.clock.advance(timedelta(minutes=31))
    code, _, err = await bg.gpubot("approve", approval_id)
    _one_refusal(code, err, "expired")
    assert (await bg.h.app.store.get_approval(approval_id)).status is ApprovalStatus.EXPIRED
    await bg.serve_follows()
    await bg.h.app.service.tick()
    await bg.h.settle()
    assert (await bg.h.app.store.get_run(run_id)).status is RunStatus.CANCELLED
    assert bg.h.sim.snapshot().node(NODE).unschedulable  # the release never ran


async def test_deny_with_reason_is_in_the_audit_trail(bg: BreakGlass) -> None:
    """`gpubot deny --reason` records the reason and the CLI origin; the run stops."""
    run_id = await bg.waiting_run()
    code, stdout, _ = await bg.gpubot("deny", run_id, "--reason", "node still under RMA")
    assert code == 0
    assert "Denied by U1" in stdout
    await bg.serve_follows()
    [vote] = await bg.events("approval.vote")
    assert vote.result["decision"] == "deny"
    assert vote.result["reason"] == "node still under RMA"
    assert (vote.result["via"], vote.result["account"]) == ("cli", "alice")
    run = await bg.h.app.store.get_run(run_id)
    assert run.status is RunStatus.CANCELLED
    assert "denied by U1" in run.note


async def test_cancel_stops_the_run_and_closes_its_buttons(bg: BreakGlass) -> None:
    """`gpubot cancel` ends the run at once in the store; a later Slack click is refused and
    the serving app runs nothing more of it."""
    run_id = await bg.waiting_run()
    [approval_id] = bg.h.approval_ids()
    code, stdout, _ = await bg.gpubot(
        "cancel", run_id, "--reason", "handled by hand", account="bob"
    )
    assert code == 0
    assert f"Cancelled {run_id}" in stdout
    await bg.serve_follows()
    assert (await bg.h.app.store.get_run(run_id)).status is RunStatus.CANCELLED
    assert (await bg.steps(run_id))["release"] == "cancelled"
    assert (await bg.h.app.store.get_approval(approval_id)).status is ApprovalStatus.CANCELLED
    [event] = await bg.events("run.cancelled")
    assert (event.actor, event.result["via"], event.result["account"]) == ("U2", "cli", "bob")
    assert "handled by hand" in event.result["reason"]

    await bg.h.click(approval_id, user="U1")
    await bg.clicked("approval.refused")
    await bg.h.standin.wait_for(lambda: bg.h.standin.of("chat.postEphemeral"))
    assert bg.h.sim.snapshot().node(NODE).unschedulable  # the release never ran
    code, _, err = await bg.gpubot("cancel", run_id)
    _one_refusal(code, err, "already cancelled")


async def test_resume_lets_a_run_that_needs_a_human_go_on(bg: BreakGlass) -> None:
    """A run paused for a human goes on after `gpubot resume`: its step asks for approval
    again, and the CLI's approval lets the serving app run it."""
    run_id = await bg.waiting_run()
    code, _, err = await bg.gpubot("resume", run_id)
    _one_refusal(code, err, "not waiting for a human")
    # The state an interrupted step whose effect was unknown leaves (Executor._recover).
    store = bg.h.app.store
    for request in await store.approvals_for(run_id):  # approved, then interrupted
        vote = Vote(user="U1", decision="approve", at=bg.h.clock.now())
        approved = replace(request, status=ApprovalStatus.APPROVED, votes=(vote,))
        await store.replace_approval(approved, expected_votes=0)
    states = {s.step_id: s for s in await store.steps(run_id)}
    reason = "step release was interrupted and its effect is unknown"
    await store.save_step(replace(states["release"], status=StepStatus.NEEDS_HUMAN, error=reason))
    await store.update_run(run_id, status=RunStatus.NEEDS_HUMAN, note=reason, now=bg.h.clock.now())

    code, stdout, _ = await bg.gpubot("runs", "show", run_id, "--json")
    held = json.loads(stdout)["held"]
    assert held["status"] == "needs_human"
    assert held["steps"] == [{"step": "release", "status": "needs_human", "why": reason}]

    bg.h.clock.advance(timedelta(minutes=5))  # someone looked at the node
    code, stdout, _ = await bg.gpubot("resume", run_id, account="bob")
    assert code == 0
    assert "Resumed" in stdout
    await bg.serve_follows()
    assert (await bg.steps(run_id))["release"] == "waiting_approval"  # asks anew
    code, _, _ = await bg.gpubot("approve", run_id)
    assert code == 0
    await bg.serve_follows()
    assert (await bg.steps(run_id))["release"] == "succeeded"
    [resumed] = await bg.events("run.resumed")
    assert (resumed.actor, resumed.step, resumed.result["via"]) == ("U2", "release", "cli")


async def test_json_shapes_of_incidents_and_runs(bg: BreakGlass) -> None:
    """`incidents` and `runs` (list and show) print the documented JSON keys."""
    run_id = await bg.waiting_run()
    await bg.h.app.service.ingest(AlertmanagerPayload.model_validate(_alert("gpu-node-08")))
    code, stdout, _ = await bg.gpubot("runs", "list", "--json")
    assert code == 0
    [listed] = json.loads(stdout)
    assert set(listed) == {
        "id", "runbook", "status", "incident_id", "cluster", "target", "requested_by",
        "dry_run", "note", "created_at", "updated_at",
    }  # fmt: skip
    shown = json.loads((await bg.gpubot("runs", "show", run_id, "--json"))[1])
    assert set(shown) == {"run", "steps", "approvals", "held"}
    assert [s["id"] for s in shown["steps"]] == ["quarantine", "release"]
    assert set(shown["steps"][0]) == {
        "id", "action", "approval", "status", "attempts", "error", "approved_by",
        "started_at", "finished_at",
    }  # fmt: skip
    [approval] = shown["approvals"]
    assert (approval["group"], approval["status"], approval["expired"]) == (
        "oncall",
        "pending",
        False,
    )
    assert shown["held"]["steps"][0]["step"] == "release"

    [incident] = json.loads((await bg.gpubot("incidents", "--json"))[1])
    assert {"id", "status", "alertname", "node", "summary"} <= set(incident)
    detail = json.loads((await bg.gpubot("incidents", "show", incident["id"], "--json"))[1])
    assert set(detail) == {"incident", "alerts", "runs"}
    assert detail["incident"]["labels"]["Hostname"] == "gpu-node-08"


async def test_show_prints_hostile_text_without_escape_sequences(bg: BreakGlass) -> None:
    """Alert text with terminal escape sequences is shown escaped, never raw."""
    hostile = _alert("gpu-node-09", extra="\x1b]0;owned\x07")
    await bg.h.app.service.ingest(AlertmanagerPayload.model_validate(hostile))
    code, stdout, _ = await bg.gpubot("incidents")
    assert code == 0
    [incident] = json.loads((await bg.gpubot("incidents", "--json"))[1])
    code, stdout, _ = await bg.gpubot("incidents", "show", incident["id"])
    assert code == 0
    assert "\x1b" not in stdout
    assert "\x07" not in stdout
    assert "\\x1b]0;owned\\x07" in stdout


def _alert(hostname: str, *, extra: str = "") -> dict[str, Any]:
    return {
        "version": "4",
        "groupKey": '{}:{alertname="GPUTemperatureHigh"}',
        "status": "firing",
        "receiver": "gpubot",
        "groupLabels": {},
        "commonLabels": {},
        "commonAnnotations": {},
        "externalURL": "http://127.0.0.1:9093",
        "alerts": [
            {
                "status": "firing",
                "labels": {"alertname": "GPUTemperatureHigh", "Hostname": hostname, "team": extra},
                "annotations": {"summary": f"hot {hostname}{extra}"},
                "startsAt": "2026-11-22T09:00:00Z",
                "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": "http://127.0.0.1:9090/graph",
                "fingerprint": "0123456789abcdef",
            }
        ],
    }


def _console_script(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed `gpubot` in a subprocess: the real OS account, the real uid lookup."""
    beside = Path(sys.executable).with_name("gpubot")
    command = [str(beside)] if beside.is_file() else [sys.executable, "-m", "gpubot.cli"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUBOT_", "SLACK_"))}
    return subprocess.run(
        [*command, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_console_script_decides_as_the_mapped_os_account(tmp_path: Path) -> None:
    """`gpubot approve` in its own process: the OS account it runs as (its uid) is looked up
    in policy.operators; unmapped, it is refused with one line and exit 1; mapped, the vote
    is stored as that approver and the serving app runs the step after its follow()."""
    rb = tmp_path / "runbooks"
    rb.mkdir()
    (rb / "breakglass.yaml").write_text(RUNBOOK % "required")
    db = tmp_path / "shared.db"
    base = {
        "store": {"url": f"sqlite:///{db}"},
        "slack": {"mode": "off"},
        "runbooks": {"dirs": [str(rb)]},
    }
    account = pwd.getpwuid(os.getuid()).pw_name
    unmapped, mapped = tmp_path / "unmapped.yaml", tmp_path / "mapped.yaml"
    unmapped.write_text(yaml.safe_dump({**base, "policy": {"groups": GROUPS}}))
    operators = {"groups": GROUPS, "operators": {account: "U1"}}
    mapped.write_text(yaml.safe_dump({**base, "policy": operators}))
    serving = build_app(load_settings(mapped), notifier=RecordingNotifier())  # real clock
    try:
        _plan, run = await serving.service.start_command_run(
            runbook="breakglass", args={"node": NODE}, requested_by="U9", cluster="sim"
        )
        assert run is not None
        await serving.service.wait_idle()
        await serving.service.follow()  # notes where the audit trail is
        await serving.service.wait_idle()

        refused = _console_script("approve", run.id, "--config", str(unmapped), cwd=tmp_path)
        assert refused.returncode == 1
        assert refused.stderr.splitlines() == [
            f"gpubot: refused: local account {account!r} is not in policy.operators; "
            "map it to an approver identity in the config to decide from the CLI"
        ]
        done = _console_script("approve", run.id, "--config", str(mapped), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "Approved by U1" in done.stdout

        await serving.service.follow()
        await serving.service.wait_idle()
        states = {s.step_id: s.status for s in await serving.store.steps(run.id)}
        assert states["release"] is StepStatus.SUCCEEDED
        shown = _console_script(
            "runs", "show", run.id, "--json", "--config", str(mapped), cwd=tmp_path
        )
        steps = {s["id"]: s for s in json.loads(shown.stdout)["steps"]}
        assert steps["release"]["approved_by"] == ["U1"]
    finally:
        await serving.aclose()


@pytest.mark.parametrize("command", ["incidents", "runs", "approve", "deny", "cancel", "resume"])
def test_each_break_glass_command_has_help(tmp_path: Path, command: str) -> None:
    """`--help` explains each command (and who decides, for the deciding ones)."""
    result = _console_script(command, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: gpubot {command}")
    if command in ("approve", "deny", "cancel", "resume"):
        assert "policy.operators" in " ".join(result.stdout.split())
