"""XID 79 on the simulated cluster: the node's evidence is kept before the reset, said in the
thread with its hash, listed and fetched by `gpubot evidence`, and checked by `gpubot audit
verify`; a node whose agent cannot gather it is still remediated, and the thread says so."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml
from slack_harness import FIXTURES, SlackHarness, slack_harness
from test_cli import assert_one_line_error, gpubot
from test_xid79_diag import run_xid79

from gpubot.backends.simulated.scenarios import evidence_fails
from gpubot.domain.control.approvals import ApprovalStatus
from gpubot.domain.runbooks.runs import RunStatus

XID79 = (FIXTURES / "xid79_firing.json").read_bytes()
NODE = "gpu-node-07"  # the fixture alert's Hostname, GPU 3

pytestmark = pytest.mark.usefixtures("clean_env")


def config_for(tmp_path: Path) -> Path:
    """A config naming the harness's store (slack.db), for the CLI."""
    path = tmp_path / "cli.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "store": {"url": f"sqlite:///{tmp_path}/slack.db"},
                "clusters": [{"name": "sim", "state_file": str(tmp_path / "sim.json")}],
                "slack": {"mode": "off"},
            }
        ),
        encoding="utf-8",
    )
    return path


async def cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(gpubot, *args, cwd=cwd)


async def test_evidence_is_kept_before_the_reset_and_listed_by_the_cli(
    h: SlackHarness, tmp_path: Path
) -> None:
    run, thread = await run_xid79(h)
    assert run.status is RunStatus.SUCCEEDED
    steps = {s.step_id: s for s in await h.app.store.steps(run.id)}
    assert steps["evidence"].status.value == "succeeded"
    assert steps["evidence-failed"].status.value == "skipped"
    out = steps["evidence"].output
    assert out["parts"] == {
        "nvidia-bug-report.log.gz": "ok",
        "nvidia-smi-q.xml": "ok",
        "kernel-nvrm.log": "ok",
        "gpu-ledger.json": "ok",
    }

    # Kept after the drain and before the reset started, with its sha256 in the audit event.
    events = await h.app.store.events(incident_id=run.incident_id)
    [stored] = [e for e in events if e.kind == "evidence.stored"]
    assert stored.result["sha256"] == out["sha256"]
    assert stored.result["evidence_id"] == out["evidence_id"]
    started = {e.step: e.seq for e in events if e.kind == "step.started"}
    finished = {e.step: e.seq for e in events if e.kind == "step.finished"}
    assert finished["drain"] < stored.seq < started["reset"]
    assert f"Evidence from {NODE} kept: bundle {out['evidence_id']}" in thread
    assert out["sha256"][:16] in thread
    assert f"gpubot evidence get {out['evidence_id']}" in thread

    # The CLI lists it for the incident, and writes the very bytes the event vouches for.
    cfg = config_for(tmp_path)
    listed = await cli(
        "evidence", "list", "--incident", run.incident_id, "--json", "--config", cfg, cwd=tmp_path
    )
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert (row["id"], row["node"], row["sha256"]) == (out["evidence_id"], NODE, out["sha256"])
    text = await cli("evidence", "list", "--config", cfg, cwd=tmp_path)
    assert NODE in text.stdout
    assert "kernel-nvrm.log ok" in text.stdout
    bundle = tmp_path / "bundle.tar.gz"
    got = await cli(
        "evidence", "get", str(out["evidence_id"]), "--out", bundle, "--config", cfg, cwd=tmp_path
    )
    assert got.returncode == 0, got.stderr
    content = bundle.read_bytes()
    assert hashlib.sha256(content).hexdigest() == out["sha256"]
    with tarfile.open(fileobj=io.BytesIO(content)) as tar:
        names = tar.getnames()
        manifest = json.load(tar.extractfile("manifest.json"))  # type: ignore[arg-type]
        kernel = tar.extractfile("kernel-nvrm.log").read().decode()  # type: ignore[union-attr]
        report = tar.extractfile("nvidia-bug-report.log.gz").read()  # type: ignore[union-attr]
    assert names[0] == "manifest.json"
    assert (manifest["node"], manifest["incident_id"], manifest["step"]) == (
        NODE,
        run.incident_id,
        "evidence",
    )
    assert ": 79, " in kernel
    assert "NVRM: Xid" in kernel
    assert f"Host: {NODE}" in gzip.decompress(report).decode()

    # Verified end to end; then a byte changed in the stored bundle is found.
    verified = await cli("audit", "verify", "--config", cfg, cwd=tmp_path)
    assert verified.returncode == 0, verified.stderr
    assert "1 evidence bundle(s) match their audit events" in verified.stdout
    again = await cli(
        "evidence", "get", str(out["evidence_id"]), "--out", bundle, "--config", cfg, cwd=tmp_path
    )
    assert_one_line_error(again, "exists")
    import sqlite3

    with sqlite3.connect(tmp_path / "slack.db") as db:
        db.execute("UPDATE evidence SET content = ? WHERE id = ?", (b"forged", out["evidence_id"]))
    tampered = await cli("audit", "verify", "--config", cfg, cwd=tmp_path)
    assert tampered.returncode == 1
    assert f"evidence {out['evidence_id']}: content hashes to" in tampered.stderr
    refused = await cli(
        "evidence",
        "get",
        str(out["evidence_id"]),
        "--out",
        tmp_path / "x",
        "--config",
        cfg,
        cwd=tmp_path,
    )
    assert_one_line_error(refused, "tampered")


async def test_a_failed_gathering_is_said_and_the_reset_goes_on(h: SlackHarness) -> None:
    """evidence_required is false by default: the remediation completes and the run ends
    succeeded, its note and the thread saying it went on without evidence."""
    evidence_fails(h.sim, node=NODE, reason="evidence is already being gathered on this node")
    run, thread = await run_xid79(h)
    steps = {s.step_id: s.status.value for s in await h.app.store.steps(run.id)}
    assert steps["evidence"] == "failed"
    assert steps["evidence-failed"] == "succeeded"
    assert (steps["drain"], steps["reset"], steps["uncordon"]) == ("succeeded",) * 3
    assert (run.status, run.note) == (
        RunStatus.SUCCEEDED,
        "went on without evidence (evidence failed)",
    )
    assert not (await h.sim.kube.get_node(node=NODE)).unschedulable
    assert f"Evidence could not be gathered from {NODE}" in thread
    assert "already being gathered" in thread
    assert "pool default (remediate) does not require evidence: the run goes on" in thread
    assert await h.app.store.list_evidence() == []


POOL_LABEL = "gpubot.io/pool"


def requiring_policy(*, default: bool, pool: bool | None) -> dict[str, object]:
    """oncall approves; nodes labelled gpubot.io/pool=train are pool `train`."""
    train: dict[str, object] = {"name": "train", "match": {POOL_LABEL: "train"}}
    if pool is not None:
        train["evidence_required"] = pool
    return {
        "groups": {"oncall": {"users": ["U1", "U2"], "usergroups": ["S0ONCALL"]}},
        "evidence_required": default,
        "pools": [train],
    }


@pytest.mark.parametrize(
    ("default", "pool", "labelled"),
    [(True, None, False), (False, True, True)],
    ids=["global-default", "pool-sets-it"],
)
async def test_a_pool_that_requires_evidence_stops_before_the_reset(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    default: bool,
    pool: bool | None,
    labelled: bool,
) -> None:
    """evidence_required: true (globally, or the node's pool): the failed gathering stops
    the run; the reset never starts, the node stays cordoned, and the thread says why."""
    policy = requiring_policy(default=default, pool=pool)
    async with slack_harness(tmp_path, monkeypatch, policy=policy) as h:
        if labelled:
            with h.sim.mutation() as state:
                state.node(NODE).labels[POOL_LABEL] = "train"
        evidence_fails(h.sim, node=NODE, reason="the agent is unreachable")
        run, thread = await run_xid79(h)
        steps = {s.step_id: s.status.value for s in await h.app.store.steps(run.id)}
        assert (steps["drain"], steps["evidence"]) == ("succeeded", "failed")
        assert (steps["evidence-failed"], steps["reset"], steps["uncordon"]) == ("cancelled",) * 3
        assert run.status is RunStatus.FAILED
        assert "requires evidence before anything destructive" in run.note
        events = await h.app.store.events(run_id=run.id)
        assert not [e for e in events if e.kind == "step.started" and e.step == "reset"]
        assert (await h.sim.kube.get_node(node=NODE)).unschedulable
        name = "train (remediate)" if labelled else "default (remediate)"
        assert f"pool {name} requires evidence before anything destructive" in thread
        assert "the steps after it do not run" in thread


async def test_a_pool_may_waive_evidence_the_global_block_requires(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """evidence_required: true globally, false for pool `train`: that pool's node goes on."""
    policy = requiring_policy(default=True, pool=False)
    async with slack_harness(tmp_path, monkeypatch, policy=policy) as h:
        with h.sim.mutation() as state:
            state.node(NODE).labels[POOL_LABEL] = "train"
        evidence_fails(h.sim, node=NODE, reason="the agent is unreachable")
        run, thread = await run_xid79(h)
        steps = {s.step_id: s.status.value for s in await h.app.store.steps(run.id)}
        assert (steps["evidence"], steps["reset"], steps["uncordon"]) == (
            "failed",
            "succeeded",
            "succeeded",
        )
        assert run.status is RunStatus.SUCCEEDED
        assert "pool train (remediate) does not require evidence" in thread


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    cfg = config_for(tmp_path)
    assert_one_line_error(gpubot("evidence", "list", "--config", cfg, cwd=tmp_path), "no database")
    bad = gpubot("evidence", "get", "../etc", "--config", cfg, cwd=tmp_path)
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr
    bad = gpubot("evidence", "list", "--incident", "inc-1;rm -rf /", "--config", cfg, cwd=tmp_path)
    assert bad.returncode == 2
    assert "not an incident id" in bad.stderr


async def test_a_hand_off_to_service_keeps_the_evidence_first(h: SlackHarness) -> None:
    """node-handoff to=service (a choice xid79 offers): the bundle is kept before the
    hardware-service mark, and its event names the run's incident."""
    reply = await h.slash(f"run node-handoff node={NODE} to=service", user="U1")
    assert reply.status_code == 200
    await h.settle()
    for _ in range(500):  # the command's run starts after the slash command is answered
        runs = [r for r in await h.app.store.list_runs() if r.runbook == "node-handoff"]
        if runs:
            break
        await h.settle()
    [run] = runs
    for _ in range(2000):
        current = await h.app.store.get_run(run.id)
        if current.status.finished:
            break
        pending = [
            a.id
            for a in await h.app.store.approvals_for(run.id)
            if a.status is ApprovalStatus.PENDING
        ]
        if pending:
            await h.click(pending[0], user="U2")
        await h.settle()
    steps = {s.step_id: s.status.value for s in await h.app.store.steps(run.id)}
    assert (steps["evidence"], steps["service"], steps["reboot"]) == (
        "succeeded",
        "succeeded",
        "skipped",
    )
    events = await h.app.store.events(run_id=run.id)
    [stored] = [e for e in events if e.kind == "evidence.stored"]
    started = {e.step: e.seq for e in events if e.kind == "step.started"}
    assert stored.seq < started["service"]
    [kept] = await h.app.store.list_evidence()
    assert (kept.run_id, kept.step, kept.node) == (run.id, "evidence", NODE)
