"""Break-glass CLI beside a serving app on one database (SQLite and PostgreSQL): decisions taken
with `gpubot approve/deny/cancel/resume` are votes signed with the operator's SSH key, which
the serving app checks against its own operator keys and counts under the Slack rules; and
`incidents`/`runs` show what is there."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from slack_harness import SlackHarness, slack_harness
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from gpubot.backends.store import SqlStore, open_store
from gpubot.cli import parser
from gpubot.cli.ops import build_cli_app, run_ops
from gpubot.config import load_settings
from gpubot.domain.control.approvals import ApprovalStatus, Vote
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.domain.runbooks.runs import RunStatus, StepStatus
from gpubot.errors import InputError
from gpubot.wiring import App

PG_URL = os.environ.get("GPUBOT_TEST_PG_URL", "postgresql+psycopg://root@127.0.0.1:5432/test")
NODE = "gpu-node-05"
GROUPS = {"oncall": {"users": ["U1", "U2"], "usergroups": ["S0ONCALL"]}}
# Each operator's SSH key, and who the server's config says it is.
OPERATORS = {
    "alice": {"user": "U1"},
    "bob": {"user": "U2"},
    "carol": {"user": "U5", "usergroups": ["S0ONCALL"]},  # in the group through its user group
    "eve": {"user": "U7"},  # listed, but in no approver group
}
DECIDING = ("approve", "deny", "cancel", "resume")
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


def make_key(directory: Path, name: str) -> Path:
    """An ed25519 key as an operator makes one (`ssh-keygen -t ed25519 -N ''`)."""
    path = directory / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return path


def fingerprint_of(key: Path) -> str:
    line = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", f"{key}.pub"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return line.split()[1]


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """alice, bob, carol, eve (listed in the server's config) and mallory (not listed)."""
    directory = tmp_path_factory.mktemp("keys")
    return {name: make_key(directory, name) for name in [*OPERATORS, "mallory"]}


def operator_keys(keys: dict[str, Path]) -> list[dict[str, Any]]:
    return [
        {"key": Path(f"{keys[name]}.pub").read_text().strip(), **who}
        for name, who in OPERATORS.items()
    ]


@dataclass
class BreakGlass:
    """The serving app (Slack harness) and a CLI process's app over the same database."""

    h: SlackHarness
    cli: App
    out: Callable[[], tuple[str, str]]
    keys: dict[str, Path]

    async def gpubot(self, *argv: str, key: str = "alice") -> tuple[int, str, str]:
        """One CLI command, a decision signed with `key`'s SSH key, while the serving app
        counts what the CLI stores (as its follow loop does): exit code, stdout, stderr."""
        self.out()
        if argv[0] in DECIDING:
            argv = (*argv, "--key", str(self.keys[key]), "--wait", "10")
        command = asyncio.create_task(
            run_ops(parser().parse_args(argv), app=self.cli, account=f"os-{key}")
        )
        while not command.done():
            await self.h.app.service.count_signed_votes()
            await asyncio.sleep(0.01)
        code = command.result()
        stdout, stderr = self.out()
        return code, stdout, stderr

    async def serve_follows(self) -> None:
        """What the serving process's ticker does every second: follow(), then let it work."""
        await self.h.app.service.background.follow()
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
    keys: dict[str, Path],
    *,
    approval: str = "required",
) -> AsyncIterator[BreakGlass]:
    rb = tmp_path / "runbooks"
    rb.mkdir()
    (rb / "breakglass.yaml").write_text(RUNBOOK % approval)
    served, used = database.open(), database.open()
    try:
        policy = {"groups": GROUPS, "operator_keys": operator_keys(keys)}
        async with slack_harness(
            tmp_path, monkeypatch, runbook_dirs=[rb], store=served, policy=policy
        ) as h:
            settings = load_settings(
                None,
                store={"url": database.url},
                slack={"mode": "off"},
                policy=policy,
                runbooks={"dirs": [str(rb)]},
            )
            cli = build_cli_app(settings, clock=h.clock, store=used)

            def out() -> tuple[str, str]:
                captured = capsys.readouterr()
                return captured.out, captured.err

            try:
                yield BreakGlass(h=h, cli=cli, out=out, keys=keys)
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
    keys: dict[str, Path],
) -> AsyncIterator[BreakGlass]:
    async with breakglass(tmp_path, monkeypatch, capsys, database, keys) as b:
        yield b


def _one_refusal(code: int, stderr: str, fragment: str) -> None:
    assert code == 1
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("gpubot: refused: ")
    assert fragment in lines[0]


async def test_cli_stores_a_signed_vote_that_only_the_server_counts(bg: BreakGlass) -> None:
    """The CLI signs the vote and stores it, deciding nothing: until the serving app has
    checked the signature against its own keys, the request stays pending."""
    run_id = await bg.waiting_run()
    bg.out()
    args = parser().parse_args(["approve", run_id, "--key", str(bg.keys["alice"]), "--wait", "0"])
    assert await run_ops(args, app=bg.cli, account="os-alice") == 0
    stdout, _ = bg.out()
    assert "no running gpubot has counted it yet" in stdout
    [approval_id] = bg.h.approval_ids()
    assert (await bg.h.app.store.get_approval(approval_id)).status is ApprovalStatus.PENDING
    assert await bg.events("approval.vote") == []
    await bg.cli.service.background.tick()  # the CLI's service never leads: it counts nothing
    assert (await bg.h.app.store.get_approval(approval_id)).status is ApprovalStatus.PENDING

    # The periodic tick counts it too: a vote stored while no leader was following.
    await bg.h.app.service.background.tick()
    await bg.h.settle()
    assert (await bg.steps(run_id))["release"] == "succeeded"
    assert await bg.h.app.service.count_signed_votes() == 0  # counted once


async def test_a_signed_vote_counted_after_its_expiry_is_refused(bg: BreakGlass) -> None:
    """A signed vote lives five minutes: one the server reaches later (no server was running,
    or a copy kept for later) is refused, and the request stays pending."""
    run_id = await bg.waiting_run()
    args = parser().parse_args(["approve", run_id, "--key", str(bg.keys["alice"]), "--wait", "0"])
    assert await run_ops(args, app=bg.cli, account="os-alice") == 0
    bg.h.clock.advance(timedelta(minutes=5))
    await bg.h.app.service.count_signed_votes()
    [refused] = await bg.events("vote.refused")
    assert refused.actor == "U1"
    assert "expired" in refused.result["message"]
    [approval_id] = bg.h.approval_ids()
    assert (await bg.h.app.store.get_approval(approval_id)).status is ApprovalStatus.PENDING


async def test_hostile_vote_files_are_refused_before_anything_is_stored(
    bg: BreakGlass, tmp_path: Path
) -> None:
    """An oversized signature, a message without its signature, a binary message and a vote
    for another decision are refused before anything is stored."""
    _run_id = await bg.waiting_run()
    [approval_id] = bg.h.approval_ids()
    vote = tmp_path / "vote.json"
    code, _, err = await bg.gpubot("approve", approval_id, "--write-message", str(vote))
    assert code == 0, err
    huge, binary = tmp_path / "huge.sig", tmp_path / "binary.json"
    huge.write_text("A" * 20000)
    binary.write_bytes(b"\xff\x00" * 10)
    # Usage errors reach cli.main, which prints them in one line with exit 2.
    for extra, fragment in (
        (["--message", str(vote), "--signature", str(huge)], "over 8192 bytes"),
        (["--message", str(vote)], "go together"),
    ):
        args = parser().parse_args(["approve", approval_id, *extra])
        with pytest.raises(InputError, match=fragment):
            await run_ops(args, app=bg.cli, account="os-alice")
    for argv, fragment in (
        (["approve", approval_id, "--message", str(binary), "--signature", str(huge)], "JSON"),
        (
            ["deny", approval_id, "--message", str(vote), "--signature", str(huge)],
            f"is a vote to approve {approval_id}, not to deny",
        ),
    ):
        bg.out()
        assert await run_ops(parser().parse_args(argv), app=bg.cli, account="os-alice") == 1
        _, err = bg.out()
        assert err.count("\n") == 1, err
        assert fragment in err
    assert await bg.events("vote.submitted") == []


async def test_cli_approval_runs_the_step_on_the_serving_app(bg: BreakGlass) -> None:
    """The serving app counts the CLI's signed vote and runs the step, as the identity its
    config gives the key; the audit event names the key's fingerprint."""
    run_id = await bg.waiting_run()
    code, stdout, _ = await bg.gpubot("approve", run_id)
    assert code == 0
    assert "Approved by U1" in stdout

    await bg.serve_follows()
    assert (await bg.steps(run_id))["release"] == "succeeded"
    assert not bg.h.sim.snapshot().node(NODE).unschedulable
    [vote] = await bg.events("approval.vote")
    assert vote.actor == "U1"
    assert vote.result["via"] == "cli"
    assert vote.result["account"] == "os-alice"
    assert vote.result["key"] == fingerprint_of(bg.keys["alice"])
    [started] = [e for e in await bg.events("step.started") if e.step == "release"]
    assert started.actor == "U1"


async def test_two_person_rule_across_slack_and_cli(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    database: Database,
    keys: dict[str, Path],
) -> None:
    """A Slack click and a CLI vote are two approvers; the same person twice (Slack then
    CLI) is one, and the requester never counts."""
    async with breakglass(
        tmp_path, monkeypatch, capsys, database, keys, approval="two-person"
    ) as b:
        run_id = await b.waiting_run(requested_by="U2")
        [approval_id] = b.h.approval_ids()
        code, _, err = await b.gpubot("approve", approval_id, key="bob")
        _one_refusal(code, err, "requester of a run cannot approve")

        await b.h.click(approval_id, user="U1")
        await b.clicked("approval.vote")
        code, _, err = await b.gpubot("approve", approval_id, key="alice")
        _one_refusal(code, err, "already voted")
        code, stdout, _ = await b.gpubot("approve", approval_id, key="carol")
        assert code == 0, stdout
        assert "Approved by U1 and U5" in stdout

        await b.serve_follows()
        assert (await b.steps(run_id))["release"] == "succeeded"
        approvers = [(e.actor, e.result.get("via")) for e in await b.events("approval.vote")]
        assert approvers == [("U1", None), ("U5", "cli")]


async def test_unlisted_key_or_outside_identity_is_refused(bg: BreakGlass) -> None:
    """A key missing from policy.operator_keys is refused with one line and changes
    nothing; a listed one outside the approver group is refused like a Slack click."""
    run_id = await bg.waiting_run()
    code, _, err = await bg.gpubot("approve", run_id, key="mallory")
    _one_refusal(code, err, f"key {fingerprint_of(bg.keys['mallory'])} is not in policy")
    assert await bg.events("approval.vote") == []
    assert await bg.events("approval.refused") == []

    code, _, err = await bg.gpubot("approve", run_id, key="eve")
    _one_refusal(code, err, "not in the approver group 'oncall'")
    [refused] = await bg.events("approval.refused")
    assert (refused.actor, refused.result["key"]) == ("U7", fingerprint_of(bg.keys["eve"]))
    code, _, err = await bg.gpubot("cancel", run_id, key="eve")
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
    await bg.h.app.service.background.tick()
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
    assert (vote.result["via"], vote.result["account"]) == ("cli", "os-alice")
    run = await bg.h.app.store.get_run(run_id)
    assert run.status is RunStatus.CANCELLED
    assert "denied by U1" in run.note


async def test_cancel_stops_the_run_and_closes_its_buttons(bg: BreakGlass) -> None:
    """`gpubot cancel` ends the run at once in the store; a later Slack click is refused and
    the serving app runs nothing more of it."""
    run_id = await bg.waiting_run()
    [approval_id] = bg.h.approval_ids()
    code, stdout, _ = await bg.gpubot("cancel", run_id, "--reason", "handled by hand", key="bob")
    assert code == 0
    assert f"Cancelled {run_id}" in stdout
    await bg.serve_follows()
    assert (await bg.h.app.store.get_run(run_id)).status is RunStatus.CANCELLED
    assert (await bg.steps(run_id))["release"] == "cancelled"
    assert (await bg.h.app.store.get_approval(approval_id)).status is ApprovalStatus.CANCELLED
    [event] = await bg.events("run.cancelled")
    assert (event.actor, event.result["via"], event.result["account"]) == ("U2", "cli", "os-bob")
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
    code, stdout, _ = await bg.gpubot("resume", run_id, key="bob")
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


@pytest.mark.parametrize("command", ["incidents", "runs", "approve", "deny", "cancel", "resume"])
def test_each_break_glass_command_has_help(tmp_path: Path, command: str) -> None:
    """`--help` explains each command (and who decides, for the deciding ones)."""
    result = _console_script(command, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: gpubot {command}")
    if command in ("approve", "deny", "cancel", "resume"):
        text = " ".join(result.stdout.split())
        assert "policy.operator_keys" in text
        assert "ssh-keygen -Y sign -n gpubot-vote" in text
