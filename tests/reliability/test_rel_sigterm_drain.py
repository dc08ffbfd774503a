"""SIGTERM to a real `gpubot serve` whose drain is waiting on pods that never finish
terminating (the node's kubelet is gone): it exits within its grace period, leaves the step
RUNNING for the next process, and the next `serve` resumes the drain to the end. And SIGTERM
to one whose Slack does not answer: the queued messages do not stretch the grace."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from reliability_procs import Procs, free_port, serve, wait_until, write_config

from gpubot.backends.simulated import SimulatedCluster, stop_kubelet
from gpubot.backends.store import open_store
from gpubot.domain.control.approvals import ApprovalStatus, ApproverGroup, cast_vote
from gpubot.domain.runbooks.runs import Run, StepState

NODE = "gpu-node-12"  # a notebook and a vLLM sandbox, no PDB
# The grace serve is given; it interrupts running steps after min(5 s, a third of it), so it
# stops well inside 20 s on an idle machine and a loaded one alike.
GRACE = 20.0
RUNBOOK = """
name: drain-test
description: cordon and drain a node on a test alert
triggers: [{alertname: DrainTest}]
params: {node: {type: node, default: "{{ alert.labels.Hostname }}"}}
target: node
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
  - id: drain
    action: node.drain
    args: {node: "{{ params.node }}"}
    approval: required
    approvers: oncall
    timeout: 10m
"""


def alert() -> dict[str, Any]:
    labels = {"alertname": "DrainTest", "cluster": "sim", "Hostname": NODE, "severity": "critical"}
    return {
        "version": "4",
        "receiver": "gpubot",
        "status": "firing",
        "groupKey": '{}:{alertname="DrainTest"}',
        "groupLabels": {"alertname": "DrainTest"},
        "commonLabels": labels,
        "commonAnnotations": {},
        "externalURL": "http://127.0.0.1:9093",
        "truncatedAlerts": 0,
        "alerts": [
            {
                "status": "firing",
                "labels": labels,
                "annotations": {"summary": f"drain {NODE}"},
                "startsAt": "2026-11-25T10:00:00Z",
                "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": "http://127.0.0.1:9090/graph",
                "fingerprint": "5e1f7a0d2c3b4a59",
            }
        ],
    }


def read(url: str) -> tuple[list[Run], dict[str, StepState], list[str]]:
    async def go() -> tuple[list[Run], dict[str, StepState], list[str]]:
        store = open_store(url)
        try:
            runs = await store.list_runs()
            steps = {s.step_id: s for r in runs for s in await store.steps(r.id)}
            kinds = [e.kind for r in runs for e in await store.events(run_id=r.id)]
            return runs, steps, kinds
        finally:
            await store.close()

    return asyncio.run(go())


def approve_as_on_call(url: str) -> bool:
    """The click an on-call approver makes in Slack, written through the store; the serving
    process picks the decision up on its next tick."""

    async def go() -> bool:
        store = open_store(url)
        try:
            runs = await store.list_runs()
            if not runs:
                return False
            pending = [
                r
                for r in await store.approvals_for(runs[0].id)
                if r.status is ApprovalStatus.PENDING
            ]
            if not pending:
                return False
            outcome = cast_vote(
                pending[0],
                user="U1",
                decision="approve",
                now=datetime.now(UTC),
                groups={"oncall": ApproverGroup(name="oncall", users=frozenset({"U1"}))},
            )
            assert outcome.accepted, outcome.message
            return await store.replace_approval(outcome.request, expected_votes=0)
        finally:
            await store.close()

    return asyncio.run(go())


def terminating(state_file: Path) -> list[str]:
    data = json.loads(state_file.read_text())
    return [p["name"] for p in data["pods"] if p["node"] == NODE and p.get("deletion_timestamp")]


def test_sigterm_during_a_stuck_drain_exits_in_time_and_the_next_serve_resumes_it(
    tmp_path: Path, procs: Procs
) -> None:
    state_file = tmp_path / "sim.json"
    stop_kubelet(SimulatedCluster.default(state_path=state_file), node=NODE)
    (tmp_path / "runbooks").mkdir()
    (tmp_path / "runbooks" / "drain-test.yaml").write_text(RUNBOOK)
    url = f"sqlite:///{tmp_path / 'gpubot.db'}"
    config = write_config(
        tmp_path / "gpubot.yaml",
        store={"url": url},
        runbooks={"dirs": [str(tmp_path / "runbooks")]},
        clusters=[{"name": "sim", "backend": "simulated", "state_file": str(state_file)}],
        web={"shutdown_grace_seconds": GRACE},
        policy={"groups": {"oncall": {"users": ["U1"]}}},
    )
    port = free_port()
    first = serve(procs, config, port=port, name="gpubot-1")
    reply = httpx.post(f"http://127.0.0.1:{port}/alertmanager", json=alert(), timeout=10)
    assert reply.status_code == 200, reply.text

    wait_until(lambda: approve_as_on_call(url), "the drain's approval request")
    # The drain evicted both pods; with no kubelet they stay terminating and it waits.
    wait_until(lambda: len(terminating(state_file)) == 2, "both pods to terminate")
    wait_until(lambda: read(url)[1]["drain"].status.value == "running", "the drain to run")
    time.sleep(1.5)  # into the drain's backoff wait, where a SIGTERM usually finds it

    began = time.monotonic()
    os.kill(first.pid, signal.SIGTERM)
    first.wait(timeout=GRACE + 10)
    took = time.monotonic() - began
    assert took < GRACE, f"serve took {took:.1f}s to stop after SIGTERM\n{procs.tail()}"
    assert first.returncode == 0, procs.tail()

    runs, steps, kinds = read(url)
    assert [r.status.value for r in runs] == ["running"]
    assert steps["cordon"].status.value == "succeeded"
    assert steps["drain"].status.value == "running"  # left for the next process
    assert "step.interrupted" in kinds
    assert "step.failed" not in kinds

    # The kubelet comes back and finishes the terminating pods; the next serve resumes.
    sim = SimulatedCluster(state_path=state_file)
    with sim.mutation() as state:
        state.node(NODE).kubelet = True
        state.node(NODE).ready = True
        state.pods = [p for p in state.pods if not p.deletion_timestamp]
    serve(procs, config, port=port, name="gpubot-2")
    wait_until(lambda: read(url)[0][0].status.value == "succeeded", "the resumed run to end")
    runs, steps, kinds = read(url)
    assert "step.recovered" in kinds
    assert steps["drain"].status.value == "succeeded"


def test_sigterm_with_slack_unreachable_still_exits_within_the_grace(
    tmp_path: Path, procs: Procs
) -> None:
    """Messages queued for a Slack that does not answer get what is left of the grace, not
    a fixed wait on top of it: the process is gone before Kubernetes would SIGKILL it, and
    says in one line how many messages it could not send (the store keeps the record)."""
    url = f"sqlite:///{tmp_path / 'gpubot.db'}"
    config = write_config(
        tmp_path / "gpubot.yaml",
        store={"url": url},
        # Port 9 on loopback: nothing listens, every call to Slack fails and is retried.
        slack={
            "mode": "http",
            "team_id": "T0001",
            "app_id": "A0001",
            "channel": "C0INCIDENT",
            "api_url": "http://127.0.0.1:9/api/",
        },
        web={"shutdown_grace_seconds": GRACE},
    )
    port = free_port()
    p = serve(
        procs,
        config,
        port=port,
        SLACK_BOT_TOKEN="xoxb-test",
        SLACK_SIGNING_SECRET="signing-secret-for-tests",
    )
    reply = httpx.post(f"http://127.0.0.1:{port}/alertmanager", json=alert(), timeout=10)
    assert reply.status_code == 200, reply.text
    # Stored before the 200; the incident's thread root is what waits for Slack.
    assert json.loads(reply.text)["opened"] == 1

    began = time.monotonic()
    os.kill(p.pid, signal.SIGTERM)
    p.wait(timeout=GRACE + 15)
    took = time.monotonic() - began
    assert took < GRACE, f"serve took {took:.1f}s to stop after SIGTERM\n{procs.tail()}"
    assert p.returncode == 0, procs.tail()
    log = (tmp_path / "gpubot.log").read_text()
    assert "messages unsent at shutdown" in log
    assert "Traceback" not in log
