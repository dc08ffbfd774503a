"""Triage scenarios: an OOM alert gets class, evidence and advice in its thread; XIDs are
routed by NVIDIA's immediate-action bucket."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from gpubot.backends.simulated.scenarios import inject_xid, oom_kill
from gpubot.domain.incidents.alerts import AlertmanagerPayload

MakeHarness = Any  # the `harness` fixture in conftest.py
ROOT = Path(__file__).parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "alertmanager"
RUNBOOKS = [
    (ROOT / "runbooks" / n).read_text() for n in ("xid79.yaml", "xid-route.yaml", "oom-triage.yaml")
]
POD = ("ml-train", "llama3-70b-pretrain-0")


async def deliver(h: Any, body: dict[str, Any]) -> None:
    summary = await h.service.ingest(AlertmanagerPayload.model_validate(body))
    await h.service.process(summary)
    await h.service.wait_idle()


def fixture(name: str) -> dict[str, Any]:
    return dict(json.loads((FIXTURES / name).read_text()))


@pytest.mark.parametrize(("kind", "expected"), [("host", "host_oom_killed"), ("cuda", "cuda_oom")])
async def test_oom_alert_posts_class_evidence_and_advice(
    harness: MakeHarness, kind: str, expected: str
) -> None:
    h = harness(*RUNBOOKS)
    oom_kill(h.cluster, namespace=POD[0], pod=POD[1], kind=kind)
    await deliver(h, fixture("pod_oomkilled_firing.json"))
    [run] = await h.store.list_runs()
    assert run.runbook == "oom-triage"
    assert (await h.store.get_run(run.id)).status.value == "succeeded"
    [step] = await h.store.steps(run.id)
    assert step.output["class"] == expected
    assert step.output["evidence"]
    assert step.output["advice"]
    assert step.output["restart_count"] == 1
    thread = h.notifier.text()
    assert f"Class: {expected}" in thread
    assert step.output["advice"][0] in thread
    assert not (await h.cluster.kube.get_node(node=step.output["node"])).unschedulable  # read-only


async def test_two_pods_ooms_are_two_incidents(harness: MakeHarness) -> None:
    """OOM alerts carry no node label: they are keyed by pod, not lumped per cluster."""
    h = harness(*RUNBOOKS)
    first = fixture("pod_oomkilled_firing.json")
    second = copy.deepcopy(first)
    second["alerts"][0]["labels"]["pod"] = "llama3-70b-pretrain-1"
    second["alerts"][0]["fingerprint"] = "e41f0a9c2b7d6c36"
    await deliver(h, first)
    await deliver(h, second)
    assert len(await h.store.list_incidents()) == 2


def xid_alert(code: int) -> dict[str, Any]:
    body = fixture("xid79_firing.json")
    alert = body["alerts"][0]
    alert["labels"]["xid"] = str(code)
    alert["labels"] |= {"namespace": "ml-train", "pod": "llama3-70b-pretrain-0"}
    alert["fingerprint"] = f"{code:016x}"
    return body


async def _route(h: Any, code: int) -> tuple[list[str], dict[str, str]]:
    await deliver(h, xid_alert(code))
    runs = await h.store.list_runs()
    statuses = {}
    for run in runs:
        statuses |= {
            f"{run.runbook}:{s.step_id}": s.status.value for s in await h.store.steps(run.id)
        }
    return sorted(r.runbook for r in runs), statuses


async def test_restart_app_xid_tells_the_workload_owner(harness: MakeHarness) -> None:
    h = harness(*RUNBOOKS)
    runbooks, steps = await _route(h, 13)
    assert runbooks == ["xid-route"]
    assert steps["xid-route:tell-owner"] == "succeeded"
    assert steps["xid-route:ask-human"] == "skipped"
    assert "hit workload ml-train/llama3-70b-pretrain-0" in h.notifier.text()


async def test_ignore_xid_is_recorded_only(harness: MakeHarness) -> None:
    h = harness(*RUNBOOKS)
    runbooks, steps = await _route(h, 14)
    assert runbooks == ["xid-route"]
    assert steps == {
        "xid-route:explain": "succeeded",
        "xid-route:history": "succeeded",
        "xid-route:tell-owner": "skipped",
        "xid-route:ask-human": "skipped",
        "xid-route:diagnose": "skipped",
    }
    assert any(e.kind == "step.finished" and e.step == "explain" for e in await h.store.events())


@pytest.mark.parametrize("code", [54, 999])
async def test_other_xids_ask_a_human_with_the_catalogs_advice(
    harness: MakeHarness, code: int
) -> None:
    h = harness(*RUNBOOKS)
    runbooks, steps = await _route(h, code)
    assert runbooks == ["xid-route"]
    assert steps["xid-route:ask-human"] == "succeeded"
    text = h.notifier.text()
    assert "needs a person" in text
    assert ("CHECK_MECHANICALS" in text) if code == 54 else ("not in NVIDIA's XID catalog" in text)


@pytest.mark.parametrize("code", [79, 48, 46])
async def test_reset_bucket_xid_runs_the_remediation_not_the_router(
    harness: MakeHarness, code: int
) -> None:
    """RESTART_BM (79), WORKFLOW_XID_48 (48) and RESET_GPU (46) all run the xid79 runbook;
    the quarantine taint carries the code."""
    h = harness(*RUNBOOKS)
    inject_xid(h.cluster, node="gpu-node-07", gpu=3, xid=code)
    runbooks, steps = await _route(h, code)
    assert runbooks == ["xid79"]
    assert steps["xid79:taint"] == "succeeded"
    node = await h.cluster.kube.get_node(node="gpu-node-07")
    assert any(t.key == "gpubot.io/xid" and t.value == str(code) for t in node.taints)
