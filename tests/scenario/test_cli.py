"""The `gpubot` console script in a subprocess: help, plan, runbooks, audit, demo, serve, config."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from waiting import answers, wait_until

from gpubot.backends.recording_chat import RecordingNotifier
from gpubot.backends.simulated import SimulatedCluster, simulated_state
from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.config import load_settings
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.wiring import build_app

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "alertmanager"
XID79 = FIXTURES / "xid79_firing.json"
TEMPERATURE = FIXTURES / "alertmanager_firing.json"  # real capture; no runbook matches it
NODE, GPU = "gpu-node-07", 3
EXPORT_KEYS = {
    "ts",
    "actor",
    "kind",
    "incident_id",
    "step",
    "action",
    "args",
    "result",
    "dry_run",
    "prev_hash",
    "hash",
}


def _gpubot_command() -> list[str]:
    """The installed console script beside this interpreter, else on PATH, else `-m`."""
    beside = Path(sys.executable).with_name("gpubot")
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("gpubot")
    return [found] if found else [sys.executable, "-m", "gpubot.cli"]


GPUBOT = _gpubot_command()
# Settings read GPUBOT_*/SLACK_* from the environment; a developer's shell must not leak in.
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("GPUBOT_", "SLACK_"))}


def gpubot(
    *args: str | Path, cwd: Path, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`gpubot ARGS` in `cwd`, with ENV plus `env` (GPUBOT_*/SLACK_* a test sets)."""
    return subprocess.run(
        [*GPUBOT, *(str(a) for a in args)],
        cwd=cwd,
        env={**ENV, **(env or {})},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """Non-zero exit, exactly one line on stderr, `gpubot: error:` first, no traceback."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("gpubot: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


@dataclass(frozen=True)
class Workspace:
    """A config in tmp_path: SQLite store and simulated-cluster state file both in there too."""

    dir: Path
    config: Path
    db: Path
    state: Path

    def sql(self, statement: str, *params: Any) -> list[tuple[Any, ...]]:
        """Run SQL behind gpubot's back (reading, or tampering with the audit table)."""
        with contextlib.closing(sqlite3.connect(self.db)) as conn, conn:
            return conn.execute(statement, params).fetchall()

    def count(self, table: str) -> int:
        """Rows in a store table; a database file that was never created holds none."""
        if not self.db.exists():
            return 0
        ((n,),) = self.sql(f"SELECT count(*) FROM {table}")
        return int(n)

    def cluster(self) -> SimulatedCluster:
        """The simulated cluster as the next gpubot process will load it from its state file."""
        return SimulatedCluster.default(name="sim", state_path=self.state)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    db, state = tmp_path / "gpubot.db", tmp_path / "sim.json"
    config = tmp_path / "cfg.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "store": {"url": f"sqlite:///{db}"},
                "clusters": [{"name": "sim", "backend": "simulated", "state_file": str(state)}],
                "policy": {"groups": {"oncall": {"users": ["U1"]}}},
                "slack": {"mode": "off"},
            }
        ),
        encoding="utf-8",
    )
    return Workspace(dir=tmp_path, config=config, db=db, state=state)


# -- help ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param((), ["serve", "demo", "plan", "runbooks", "audit"], id="top"),
        pytest.param(("serve",), ["--config", "--host", "--port"], id="serve"),
        pytest.param(("demo",), ["--interactive"], id="demo"),
        pytest.param(("plan",), ["--alert", "--json", "--config"], id="plan"),
        pytest.param(("runbooks",), ["validate"], id="runbooks"),
        pytest.param(("runbooks", "validate"), ["dir", "--config"], id="runbooks-validate"),
        pytest.param(("audit",), ["verify", "export"], id="audit"),
        pytest.param(("audit", "verify"), ["--config"], id="audit-verify"),
        pytest.param(("audit", "export"), ["--incident", "--config"], id="audit-export"),
    ],
)
def test_help_lists_subcommands_and_options(
    tmp_path: Path, args: tuple[str, ...], expected: list[str]
) -> None:
    """Every level of `--help` exits 0 and names what can be typed there."""
    result = gpubot(*args, "--help", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: gpubot {' '.join(args)}".rstrip())
    for word in expected:
        assert word in result.stdout
    assert list(tmp_path.iterdir()) == []


def test_no_subcommand_is_a_usage_error(tmp_path: Path) -> None:
    """A bare `gpubot` says what is missing instead of doing something by default."""
    result = gpubot(cwd=tmp_path)

    assert result.returncode == 2
    assert "usage: gpubot" in result.stderr
    assert "Traceback" not in result.stderr


# -- plan ------------------------------------------------------------------------------------


def _plan_json(ws: Workspace, alert: Path) -> list[dict[str, Any]]:
    result = gpubot("plan", "--alert", alert, "--json", "--config", ws.config, cwd=ws.dir)
    assert result.returncode == 0, result.stderr
    plans: list[dict[str, Any]] = json.loads(result.stdout)
    return plans


def test_plan_json_shows_xid79_steps_with_approval_levels_and_rendered_args(
    ws: Workspace,
) -> None:
    """Quarantine steps are automatic; the drain needs on-call approval; args are rendered."""
    (plan,) = _plan_json(ws, XID79)

    assert plan["runbook"] == "xid79"
    assert plan["cluster"] == "sim"
    assert plan["target"] == NODE
    uuid = json.loads(XID79.read_text())["alerts"][0]["labels"]["UUID"]
    assert plan["params"] == {
        "node": NODE,
        "xid": "79",
        "gpu": str(GPU),
        "uuid": uuid,
        "pci_bus_id": None,  # DCGM's label, when the exporter sends it
        "recovery": None,  # XID 154 only
    }
    assert plan["problems"] == []
    steps = {s["id"]: s for s in plan["steps"]}
    assert list(steps) == [
        "check",
        "history",
        "owner",
        "leave-alone",
        "cordon",
        "taint",
        "notify",
        "drain",
        "evidence",
        "evidence-failed",
        "reset",
        "verify",
        "diag",
        "untaint",
        "uncordon",
        "released",
        "diag-failed",
        "diag-handoff",
        "reboot",
        "rma",
        "rma-notify",
    ]
    assert {
        i: steps[i]["approval"] for i in ("check", "cordon", "taint", "notify", "evidence")
    } == {
        "check": "auto",
        "cordon": "auto",
        "taint": "auto",
        "notify": "auto",
        "evidence": "auto",  # kept before the reset, reboot or hand-off
    }
    for gated in ("drain", "reset", "untaint", "uncordon", "reboot"):
        assert steps[gated]["approval"] == "required"
    # The alert's UUID label goes with the index: the agent refuses a reset of another GPU.
    assert steps["reset"]["args"] == {"node": NODE, "gpu": str(GPU), "uuid": uuid, "xid": "79"}
    # The GPU's history decides the remedy; the plan says what it would be now.
    assert steps["history"]["approval"] == "auto"
    assert "now: reset: 0 reset(s) in the last 7 d" in steps["history"]["summary"]
    assert steps["drain"]["approvers"] == "oncall"
    assert steps["cordon"]["args"] == {"node": NODE}
    assert steps["drain"]["args"] == {"node": NODE}
    assert steps["taint"]["args"] == {
        "node": NODE,
        "key": "gpubot.io/xid",
        "value": "79",
        "effect": "NoSchedule",
    }
    assert f"XID 79 on {NODE} GPU {GPU}" in steps["notify"]["args"]["message"]
    assert "{{" not in json.dumps(plan)


def test_plan_reads_live_state_from_the_configured_cluster(ws: Workspace) -> None:
    """Healthy node: cordon would be skipped; after an XID 79 is injected it would run."""
    before = {s["id"]: s for s in _plan_json(ws, XID79)[0]["steps"]}
    inject_xid(ws.cluster(), node=NODE, gpu=GPU)
    after = {s["id"]: s for s in _plan_json(ws, XID79)[0]["steps"]}

    assert before["cordon"]["will_run"] is False
    assert after["cordon"]["will_run"] is True
    assert after["drain"]["will_run"] is True
    # Read in words, not as a Python dict: "(now: 8 GPUs, 1 unhealthy (GPU 3: XID 79))".
    assert f"1 unhealthy (GPU {GPU}: XID 79)" in json.dumps(after["check"])


def test_plan_stores_and_changes_nothing(ws: Workspace) -> None:
    """`plan` is a dry run: no incident, run or audit row, and the node stays schedulable."""
    inject_xid(ws.cluster(), node=NODE, gpu=GPU)

    _plan_json(ws, XID79)
    text = gpubot("plan", "--alert", XID79, "--config", ws.config, cwd=ws.dir)

    assert text.returncode == 0, text.stderr
    assert "xid79" in text.stdout
    assert "required" in text.stdout
    assert [ws.count(t) for t in ("incidents", "runs", "approvals", "audit")] == [0, 0, 0, 0]
    assert ws.cluster().snapshot().node(NODE).unschedulable is False


def test_plan_for_an_alert_no_runbook_matches(ws: Workspace) -> None:
    """The real temperature capture matches no runbook: said plainly, exit 0."""
    text = gpubot("plan", "--alert", TEMPERATURE, "--config", ws.config, cwd=ws.dir)

    assert text.returncode == 0, text.stderr
    assert text.stdout.strip() == "no runbook matches this alert"
    assert _plan_json(ws, TEMPERATURE) == []


def test_plan_on_a_missing_file_is_one_line(ws: Workspace) -> None:
    """A path that does not exist: one `gpubot: error:` line naming it."""
    result = gpubot("plan", "--alert", "nope.json", "--config", ws.config, cwd=ws.dir)

    assert_one_line_error(result, "nope.json", "No such file")


@pytest.mark.parametrize(
    ("content", "fragments"),
    [
        pytest.param("{bad", ["Invalid JSON"], id="not-json"),
        pytest.param("", ["Invalid JSON"], id="empty"),
        pytest.param('{"version": "3"}', ["version: "], id="wrong-version"),
    ],
)
def test_plan_on_a_file_that_is_not_a_payload_is_one_line(
    ws: Workspace, content: str, fragments: list[str]
) -> None:
    """Not JSON, or JSON of the wrong shape: one line naming the file and what is wrong."""
    alert = ws.dir / "alert.json"
    alert.write_text(content, encoding="utf-8")

    result = gpubot("plan", "--alert", alert, "--config", ws.config, cwd=ws.dir)

    line = assert_one_line_error(result, str(alert), "not an Alertmanager payload", *fragments)
    assert ": : " not in line  # no empty field location in the message


# -- runbooks validate -----------------------------------------------------------------------


def test_validate_shipped_runbooks(tmp_path: Path) -> None:
    """The repo's runbooks directory is valid and lists xid79 and release-node."""
    result = gpubot("runbooks", "validate", REPO / "runbooks", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    names = {line.split()[1] for line in result.stdout.splitlines() if line.startswith("ok")}
    assert {"xid79", "release-node"} <= names


def test_validate_without_a_dir_checks_the_configured_runbooks(ws: Workspace) -> None:
    """No DIR: the runbooks the config loads (the shipped ones) are checked."""
    result = gpubot("runbooks", "validate", "--config", ws.config, cwd=ws.dir)

    assert result.returncode == 0, result.stderr
    assert "xid79" in result.stdout


def _broken_runbook(tmp_path: Path, old: str, new: str) -> tuple[Path, int]:
    """xid79.yaml with the first `old` replaced by `new`; returns the file and that line."""
    source = (REPO / "runbooks" / "xid79.yaml").read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(source, start=1) if old in text)
    source[line - 1] = source[line - 1].replace(old, new)
    folder = tmp_path / "rb"
    folder.mkdir()
    path = folder / "xid79.yaml"
    path.write_text("\n".join(source) + "\n", encoding="utf-8")
    return path, line


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        pytest.param(
            "approval: required",
            "approval: sometimes",
            "steps[{i}].approval: Input should be 'auto', 'required' or 'two-person'",
            id="approval",
        ),
        pytest.param(
            "action: node.drain",
            "action: node.explode",
            "steps[{i}].action: unknown action 'node.explode'",
            id="action",
        ),
    ],
)
def test_validate_names_file_line_and_field_of_a_bad_runbook(
    tmp_path: Path, old: str, new: str, problem: str
) -> None:
    """A bad value is reported as `file:line: steps[i].field: reason`, one line, non-zero exit."""
    path, line = _broken_runbook(tmp_path, old, new)
    # The step the edited line belongs to: the first whose field has the old value.
    key, value = old.split(": ")
    shipped = yaml.safe_load((REPO / "runbooks" / "xid79.yaml").read_text(encoding="utf-8"))
    index = next(i for i, step in enumerate(shipped["steps"]) if step.get(key) == value)
    problem = problem.format(i=index)

    result = gpubot("runbooks", "validate", path.parent, cwd=tmp_path)

    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    (message,) = result.stderr.splitlines()
    assert message.endswith(f"{path}:{line}: {problem}")
    assert "ok " not in result.stdout


def test_validate_invalid_yaml_is_one_line_with_its_line(tmp_path: Path) -> None:
    """Broken YAML: one line with file and line number, no traceback."""
    folder = tmp_path / "rb"
    folder.mkdir()
    (folder / "x.yaml").write_text("name: x\n  bad: [\n", encoding="utf-8")

    result = gpubot("runbooks", "validate", folder, cwd=tmp_path)

    assert_one_line_error(result, "x.yaml:2:", "YAML")


def test_validate_empty_dir_is_an_error(tmp_path: Path) -> None:
    """A directory with no runbook files is a mistake worth saying, not a silent success."""
    (tmp_path / "empty").mkdir()
    result = gpubot("runbooks", "validate", tmp_path / "empty", cwd=tmp_path)

    assert_one_line_error(result, "no runbook files")


def test_validate_missing_dir_is_one_line(tmp_path: Path) -> None:
    """A directory that does not exist is an error, not an empty success."""
    result = gpubot("runbooks", "validate", tmp_path / "nowhere", cwd=tmp_path)

    assert_one_line_error(result, "nowhere")


# -- audit -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Audited:
    ws: Workspace
    xid_incident: str
    other_incident: str


async def _record_incidents(ws: Workspace) -> tuple[str, str]:
    """Through the service, as the web hook would: an XID 79 run and an unmatched alert."""
    app = build_app(load_settings(ws.config), notifier=RecordingNotifier())
    try:
        inject_xid(simulated_state(app.clusters["sim"]), node=NODE, gpu=GPU)
        ids = []
        for path in (XID79, TEMPERATURE):
            payload = AlertmanagerPayload.model_validate_json(path.read_bytes())
            summary = await app.service.ingest(payload)
            await app.service.process(summary)
            await app.service.wait_idle()
            ids.append(summary.outcomes[0].incident_id)
    finally:
        await app.aclose()
    xid, other = ids
    assert xid is not None
    assert other is not None
    return xid, other


@pytest.fixture
async def audited(ws: Workspace) -> Audited:
    xid, other = await _record_incidents(ws)
    return Audited(ws=ws, xid_incident=xid, other_incident=other)


def _export(ws: Workspace, *extra: str) -> list[dict[str, Any]]:
    result = gpubot("audit", "export", "--config", ws.config, *extra, cwd=ws.dir)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_audit_verify_passes_on_an_untouched_trail(audited: Audited) -> None:
    """The chain written by a real run verifies; the count matches what export prints."""
    events = _export(audited.ws)
    result = gpubot("audit", "verify", "--config", audited.ws.config, cwd=audited.ws.dir)

    assert result.returncode == 0, result.stderr
    assert "verified" in result.stdout
    assert f"{len(events)} events" in result.stdout
    assert result.stderr == f"audit: database sqlite:///{audited.ws.db}\n"


def test_audit_export_prints_the_chained_events_as_json_lines(audited: Audited) -> None:
    """Each line is one event with every field; seqs run 1..n and each links to the last."""
    events = _export(audited.ws)

    assert events
    for event in events:
        assert set(event) >= EXPORT_KEYS
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["prev_hash"] == "0" * 64
    for before, after in itertools.pairwise(events):
        assert after["prev_hash"] == before["hash"]
    cordon = [e for e in events if e["action"] == "node.cordon"]
    assert [e["kind"] for e in cordon] == ["step.started", "step.finished"]
    assert all(e["args"] == {"node": NODE} and e["dry_run"] is False for e in cordon)


def test_audit_export_filters_by_incident(audited: Audited) -> None:
    """--incident keeps that incident's events only, and drops none of them."""
    everything = _export(audited.ws)
    xid = _export(audited.ws, "--incident", audited.xid_incident)
    other = _export(audited.ws, "--incident", audited.other_incident)

    assert {e["incident_id"] for e in xid} == {audited.xid_incident}
    assert {e["incident_id"] for e in other} == {audited.other_incident}
    assert len(xid) + len(other) == len(everything)
    # The captured temperature alert names cluster gpu-prod-1, which is not configured.
    assert [e["kind"] for e in other] == ["incident.opened", "alert.unknown_cluster"]
    assert _export(audited.ws, "--incident", "inc-none") == []


def _verify(audited: Audited) -> subprocess.CompletedProcess[str]:
    return gpubot("audit", "verify", "--config", audited.ws.config, cwd=audited.ws.dir)


def test_audit_verify_names_an_edited_row(audited: Audited) -> None:
    """Changing one row's actor in SQL breaks its hash: non-zero exit naming seq 3."""
    audited.ws.sql("UPDATE audit SET actor = 'mallory' WHERE seq = 3")

    result = _verify(audited)

    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        f"audit: database sqlite:///{audited.ws.db}",
        "audit: row seq=3: contents were changed after it was written",
    ]
    assert "verified" not in result.stdout


def test_audit_verify_names_a_deleted_row(audited: Audited) -> None:
    """Deleting a row from the middle leaves a gap that verify names."""
    audited.ws.sql("DELETE FROM audit WHERE seq = 5")

    result = _verify(audited)

    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "audit: row seq=6: row(s) 5 deleted before it" in result.stderr.splitlines()


def test_audit_verify_notices_the_newest_row_deleted(audited: Audited) -> None:
    """Deleting the last row leaves no gap; the chain head row still gives it away."""
    (last,) = audited.ws.sql("SELECT max(seq) FROM audit")[0]
    audited.ws.sql("DELETE FROM audit WHERE seq = ?", last)

    result = _verify(audited)

    assert result.returncode != 0
    assert f"audit: head says seq {last} / hash " in result.stderr
    assert f"last event is seq {last - 1}: events cut from the end" in result.stderr


# -- demo ------------------------------------------------------------------------------------


def test_demo_runs_end_to_end_and_verifies_its_audit_trail(tmp_path: Path) -> None:
    """`gpubot demo` exits 0, shows the approval and a verified trail, and writes nothing here."""
    result = gpubot("demo", cwd=tmp_path, timeout=60)

    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    assert "Approve" in result.stdout
    # The second node's GPU resets but fails DCGM diagnostics: it stays out, a person decides.
    assert "DCGM diagnostics level 1 failed. Failing tests: memory on GPU 5" in result.stdout
    assert "ended needs_human: gpu-node-11 is cordoned and tainted" in result.stdout
    assert "audit trail verified" in result.stdout
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def _interactive_demo(tmp_path: Path, answers: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GPUBOT, "demo", "--interactive"],
        cwd=tmp_path,
        env=ENV,
        input=answers,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("answers", "expected", "status"),
    [("deny\n" * 4, "Denied by", "cancelled"), ("approve\n" * 8, "Approved by", "succeeded")],
)
def test_interactive_demo_asks_a_person_per_step(
    tmp_path: Path, answers: str, expected: str, status: str
) -> None:
    """`--interactive` asks once per gated step and records each answer as typed at the
    terminal; the thread shows each decision once."""
    result = _interactive_demo(tmp_path, answers)

    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    assert expected in result.stdout
    assert "audit trail verified" in result.stdout
    assert f"finished: {status}" in result.stdout
    asked = result.stdout.count("Approve step `")
    typed = result.stdout.count("typed at the terminal:")
    assert asked == typed == result.stdout.count(expected) > 1


def test_interactive_demo_without_input_records_nothing_and_stops(tmp_path: Path) -> None:
    """No answer on stdin (EOF): no vote is recorded, the demo stops with one clear line."""
    result = _interactive_demo(tmp_path, "")

    assert result.returncode == 1, result.stdout[-2000:] + result.stderr
    assert "no answer on stdin: nothing recorded" in result.stdout
    assert "Demo stopped." in result.stdout
    for decided in ("typed at the terminal", "Approved by", "Denied by"):
        assert decided not in result.stdout
    assert "Traceback" not in result.stderr


def test_demo_prints_each_decision_and_audit_trail_once(tmp_path: Path) -> None:
    """Each approval shows once (the thread's line), and each run's audit trail once (its
    thread's end message): the demo does not print them again."""
    result = gpubot("demo", cwd=tmp_path, timeout=60)

    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    assert result.stdout.count("Approved by") == result.stdout.count("clicks Approve on `")
    # The first run's trail is in its thread's end message; the demo does not list it again.
    assert result.stdout.count("Audit trail (") == 1
    assert result.stdout.count(" run.created ") == 1
    assert result.stdout.count("audit trail verified") == 1


# -- serve -----------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    base_url: str
    log: Path

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


@contextlib.contextmanager
def serving(ws: Workspace, *, env: dict[str, str] | None = None) -> Iterator[Served]:
    """`gpubot serve` on a free port until /healthz answers; SIGTERM and reaped on the way out.
    `env` adds variables (an audit key) to ENV."""
    port = _free_port()
    log = ws.dir / "serve.log"
    with (
        log.open("wb") as out,
        subprocess.Popen(
            [*GPUBOT, "serve", "--config", str(ws.config), "--port", str(port)],
            cwd=ws.dir,
            env={**ENV, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        ) as proc,
    ):
        served = Served(proc=proc, base_url=f"http://127.0.0.1:{port}", log=log)
        try:
            wait_until(
                lambda: answers(f"{served.base_url}/healthz"),
                "serve to answer /healthz",
                proc=proc,
                output=served.output,
            )
            yield served
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise


def test_serve_accepts_alerts_and_acts_on_the_configured_cluster(ws: Workspace) -> None:
    """The real server: probes answer, an XID 79 post is stored and quarantines the node."""
    inject_xid(ws.cluster(), node=NODE, gpu=GPU)

    with serving(ws) as served, httpx.Client(base_url=served.base_url, timeout=10) as client:
        reply = client.post(
            "/alertmanager",
            content=XID79.read_bytes(),
            headers={"content-type": "application/json"},
        )
        assert reply.status_code == 200, served.output()
        assert reply.json() == {"status": "stored", "opened": 1}
        assert client.get("/readyz").status_code == 200
        assert 'gpubot_webhook_requests_total{code="200"} 1.0' in client.get("/metrics").text

        wait_until(
            lambda: ws.sql("SELECT status FROM runs") == [("waiting_approval",)],
            "the run to wait for approval",
            proc=served.proc,
            output=served.output,
        )

    assert served.proc.returncode in (0, -signal.SIGTERM)
    assert "Traceback" not in served.output()
    assert ws.sql("SELECT alertname, status FROM incidents") == [("GPUXidError", "open")]
    assert ws.cluster().snapshot().node(NODE).unschedulable is True


def test_serve_finishes_its_own_shutdown_on_sigterm(ws: Workspace) -> None:
    """SIGTERM (Kubernetes stopping the pod) lets gpubot finish background work and exit 0."""
    with serving(ws) as served:
        served.proc.send_signal(signal.SIGTERM)
        served.proc.wait(timeout=15)

    # main() exits 0 only after _serve returned, i.e. after wait_idle and the store's close.
    assert served.proc.returncode == 0
    assert not Path(f"{ws.db}-wal").exists()  # the store was closed (WAL checkpointed)


def test_serve_with_a_missing_config_is_one_line(tmp_path: Path) -> None:
    """A config path that does not exist stops `serve` before it binds anything."""
    result = gpubot("serve", "--config", "missing.yaml", cwd=tmp_path, timeout=30)

    assert_one_line_error(result, "missing.yaml", "no such config file")
    assert list(tmp_path.iterdir()) == []


# -- config errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        pytest.param(
            "policy: {approval_expiry: soon}\n",
            ["policy.approval_expiry", "soon"],
            id="bad-duration",
        ),
        pytest.param("polcy: {}\n", ["polcy"], id="unknown-section"),
        pytest.param("web: {port: 99999}\n", ["web.port"], id="port-out-of-range"),
        pytest.param(
            "clusters:\n  - {name: sim, backend: kubernetes}\n",
            ["clusters.sim", "agent"],
            id="kubernetes-without-agent",
        ),
        pytest.param("store: {url: [\n", ["cfg.yaml:", "invalid YAML"], id="broken-yaml"),
        pytest.param("- a\n- b\n", ["mapping"], id="not-a-mapping"),
    ],
)
@pytest.mark.parametrize("command", [("serve",), ("audit", "verify")])
def test_bad_config_is_one_line_naming_the_field(
    tmp_path: Path, text: str, fragments: list[str], command: tuple[str, ...]
) -> None:
    """A config the bot cannot use is refused in one line naming the field, before serving."""
    config = tmp_path / "cfg.yaml"
    config.write_text(text, encoding="utf-8")

    result = gpubot(*command, "--config", config, cwd=tmp_path, timeout=30)

    assert_one_line_error(result, *fragments)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("policy: {approval_expiry: soon}\n", id="bad-duration"),
        pytest.param(
            "clusters:\n  - {name: sim, backend: kubernetes}\n",
            id="kubernetes-without-agent",
        ),
    ],
)
def test_refused_config_writes_nothing(tmp_path: Path, text: str) -> None:
    """A config that is refused leaves no database file behind in the working directory."""
    config = tmp_path / "cfg.yaml"
    config.write_text(text, encoding="utf-8")

    result = gpubot("audit", "verify", "--config", config, cwd=tmp_path, timeout=30)

    assert result.returncode != 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cfg.yaml"]
