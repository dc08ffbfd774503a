"""Break-glass against a real `gpubot serve` process: the CLI, another process, approves and
the running server (SQLite, no Slack) carries the step out without a restart."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import yaml
from test_cli import Served, Workspace, gpubot, serving
from test_cli_breakglass import fingerprint_of, make_key
from waiting import wait_until

NODE = "gpu-node-05"
RUNBOOK = """\
name: breakglass
triggers: [{alertname: GPUBreakGlassTest}]
params:
  node: {type: node, default: "{{ alert.labels.Hostname }}"}
target: node
steps:
  - {id: quarantine, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
  - id: release
    action: node.uncordon
    args: {node: "{{ params.node }}"}
    approval: required
    approvers: oncall
"""
ALERT = {
    "version": "4",
    "groupKey": '{}:{alertname="GPUBreakGlassTest"}',
    "status": "firing",
    "receiver": "gpubot",
    "groupLabels": {},
    "commonLabels": {},
    "commonAnnotations": {},
    "externalURL": "http://127.0.0.1:9093",
    "alerts": [
        {
            "status": "firing",
            "labels": {"alertname": "GPUBreakGlassTest", "Hostname": NODE, "cluster": "sim"},
            "annotations": {"summary": "break-glass test"},
            "startsAt": "2026-11-22T09:00:00Z",
            "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://127.0.0.1:9090/graph",
            "fingerprint": "b1a5b1a5b1a5b1a5",
        }
    ],
}


def _until(ws: Workspace, served: Served, query: str, expected: list[tuple[str, ...]]) -> None:
    wait_until(
        lambda: ws.sql(query) == expected,
        f"{query} to be {expected}",
        proc=served.proc,
        output=served.output,
    )


def signed_workspace(tmp_path: Path) -> tuple[Workspace, Path]:
    """A config over SQLite and the simulated cluster with the break-glass runbook, and
    alice's key (listed for U1 in policy.operator_keys): the workspace and her private key."""
    rb = tmp_path / "runbooks"
    rb.mkdir()
    (rb / "breakglass.yaml").write_text(RUNBOOK)
    db, state = tmp_path / "gpubot.db", tmp_path / "sim.json"
    key = make_key(tmp_path, "alice")
    listed = [{"key": Path(f"{key}.pub").read_text().strip(), "user": "U1"}]
    config = tmp_path / "cfg.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "store": {"url": f"sqlite:///{db}"},
                "clusters": [{"name": "sim", "backend": "simulated", "state_file": str(state)}],
                "policy": {"groups": {"oncall": {"users": ["U1"]}}, "operator_keys": listed},
                "slack": {"mode": "off"},
                "runbooks": {"builtin": False, "dirs": [str(rb)]},
            }
        )
    )
    return Workspace(dir=tmp_path, config=config, db=db, state=state), key


def test_a_running_serve_carries_out_a_cli_approval(tmp_path: Path) -> None:
    """The alert's run waits at `release`; `gpubot approve` signs the vote with the
    operator's key (listed in policy.operator_keys) and stores it; the serving process checks
    the signature, counts the vote and runs the step within seconds, as the approver, and the
    node is back in service."""
    ws, key = signed_workspace(tmp_path)
    config = ws.config

    with serving(ws) as served, httpx.Client(base_url=served.base_url, timeout=10) as client:
        reply = client.post("/alertmanager", content=json.dumps(ALERT))
        assert reply.status_code == 200, served.output()
        _until(ws, served, "SELECT status FROM runs", [("waiting_approval",)])
        [(run_id,)] = ws.sql("SELECT id FROM runs")
        assert ws.cluster().snapshot().node(NODE).unschedulable

        # The serving process's follow loop looks every second: the CLI waits for its verdict.
        approved = gpubot("approve", run_id, "--config", config, "--key", key, cwd=tmp_path)
        assert approved.returncode == 0, approved.stderr
        assert "Approved by U1" in approved.stdout
        [(signer,)] = ws.sql("SELECT signer FROM signed_votes")
        assert signer == fingerprint_of(key)
        _until(ws, served, "SELECT status FROM runs", [("succeeded",)])
        shown = gpubot("runs", "show", run_id, "--json", "--config", config, cwd=tmp_path)
        steps = {s["id"]: s for s in json.loads(shown.stdout)["steps"]}
        assert (steps["release"]["status"], steps["release"]["approved_by"]) == (
            "succeeded",
            ["U1"],
        )
    assert not ws.cluster().snapshot().node(NODE).unschedulable
    assert "Traceback" not in served.output()
