"""XID 154 end to end: the recovery action the driver states picks the remediation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.domain.incidents.alerts import AlertmanagerPayload

MakeHarness = Any  # the `harness` fixture in conftest.py
ROOT = Path(__file__).parents[3]
RUNBOOKS = [(ROOT / "runbooks" / n).read_text() for n in ("xid79.yaml", "xid-route.yaml")]
NODE = "gpu-node-07"


def xid154(action: str) -> dict[str, Any]:
    body = json.loads(
        (ROOT / "tests" / "fixtures" / "alertmanager" / "xid79_firing.json").read_text()
    )
    alert = body["alerts"][0]
    alert["labels"] |= {"xid": "154", "recovery_action": action}
    alert["fingerprint"] = "0000000000000154"
    return dict(body)


async def start(h: Any, action: str) -> str:
    inject_xid(h.cluster, node=NODE, gpu=3, xid=154)
    summary = await h.service.ingest(AlertmanagerPayload.model_validate(xid154(action)))
    await h.service.process(summary)
    await h.service.wait_idle()
    [run] = await h.store.list_runs()
    assert run.runbook == "xid79"
    return str(run.id)


async def approve_next(h: Any) -> None:
    ask = h.notifier.of("ask_approval")[-1]
    await h.service.vote(approval_id=ask.approval_id, user="U1", decision="approve")
    await h.service.wait_idle()


async def test_node_reboot_required_drains_and_asks_for_a_reboot_not_a_reset(
    harness: MakeHarness,
) -> None:
    h = harness(*RUNBOOKS)
    run_id = await start(h, "NODE_REBOOT")
    steps = await h.step_status(run_id)
    assert (steps["cordon"], steps["taint"], steps["drain"]) == (
        "succeeded",
        "succeeded",
        "waiting_approval",
    )
    assert "reboot request (the driver asks for a node reboot)" in h.notifier.text()
    await approve_next(h)  # the drain
    steps = await h.step_status(run_id)
    assert steps["reset"] == "skipped"
    assert steps["reboot"] == "waiting_approval"
    await approve_next(h)
    assert (await h.step_status(run_id))["reboot"] == "succeeded"


async def test_gpu_reset_required_runs_the_reset(harness: MakeHarness) -> None:
    h = harness(*RUNBOOKS)
    run_id = await start(h, "GPU_RESET")
    await approve_next(h)  # the drain
    steps = await h.step_status(run_id)
    assert steps["drain"] == "succeeded"
    assert steps["reset"] == "waiting_approval"
    assert steps["reboot"] == "pending"


async def route(h: Any, action: str) -> dict[str, str]:
    summary = await h.service.ingest(AlertmanagerPayload.model_validate(xid154(action)))
    await h.service.process(summary)
    await h.service.wait_idle()
    [run] = await h.store.list_runs()
    assert run.runbook == "xid-route"
    return dict(await h.step_status(run.id))


async def test_drain_p2p_asks_a_person(harness: MakeHarness) -> None:
    h = harness(*RUNBOOKS)
    steps = await route(h, "DRAIN_P2P")
    assert steps["ask-human"] == "succeeded"
    assert "drain peer-to-peer" in " ".join(h.notifier.text().split())


async def test_a_cleared_action_is_recorded_only(harness: MakeHarness) -> None:
    h = harness(*RUNBOOKS)
    steps = await route(h, "NONE")
    assert steps == {
        "explain": "succeeded",
        "history": "succeeded",
        "tell-owner": "skipped",
        "ask-human": "skipped",
        "diagnose": "skipped",
    }
