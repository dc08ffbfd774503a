"""The GPU health ledger end to end: XID 79 twice on one GPU through Alertmanager, Slack and
the simulated cluster (a reset, then a reboot instead of a second reset), and `/gpu history`."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest
from slack_harness import CHANNEL, FIXTURES, SlackHarness

from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.domain.control.approvals import ApprovalStatus
from gpubot.domain.runbooks.runs import Run, RunStatus

GPU_UUID = "GPU-9d33a01c-353c-631c-dfd4-3f371200339d"  # gpu-node-07 GPU 3 in the simulation


pytestmark = pytest.mark.usefixtures("clean_env")


def payload(name: str, *, starts: str | None = None) -> bytes:
    """A captured XID 79 webhook body; `starts` moves the alert to a later firing."""
    body: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    if starts is not None:
        for alert in body["alerts"]:
            alert["startsAt"] = starts
    return json.dumps(body).encode()


async def post(h: SlackHarness, body: bytes) -> None:
    reply = await h.client.post(
        "/alertmanager", content=body, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 200
    await h.settle()


async def approve_all(h: SlackHarness, run_id: str) -> Run:
    """Approve each step the run asks for, as on-call would, until it ends."""
    for _ in range(2000):
        run = await h.app.store.get_run(run_id)
        if run.status.finished:
            return run
        pending = [
            a.id
            for a in await h.app.store.approvals_for(run_id)
            if a.status is ApprovalStatus.PENDING
        ]
        if pending:
            assert (await h.click(pending[0], user="U2")).status_code == 200
        await asyncio.sleep(0.01)  # the click is handled after its ack
        await h.settle()
    raise AssertionError(f"run {run_id} did not end: {run.status.value} ({run.note})")


async def xid_run(h: SlackHarness, body: bytes) -> tuple[Run, dict[str, str], str]:
    """The GPU falls off the bus, Alertmanager says so, on-call approves everything."""
    inject_xid(h.sim, node="gpu-node-07", gpu=3)
    before = {r.id for r in await h.app.store.list_runs()}
    await post(h, body)
    [run] = [r for r in await h.app.store.list_runs() if r.id not in before]
    run = await approve_all(h, run.id)
    steps = {s.step_id: s.status.value for s in await h.app.store.steps(run.id)}
    thread = "\n".join(
        h.standin.text_of(m)
        for root in h.standin.roots(CHANNEL)
        for m in h.standin.thread(root.ts)
        if run.incident_id and run.incident_id in h.standin.text_of(root)
    )
    return run, steps, thread


async def test_a_second_xid79_on_a_reset_gpu_asks_for_a_reboot(h: SlackHarness) -> None:
    """First XID 79 on GPU X: the GPU is reset. The same GPU falls off again a day later
    (within reset_window, max_resets 1): the run skips the reset and asks for a reboot after
    the drain, and the thread says why. The ledger holds both XIDs, the reset and the reboot,
    each with its incident."""
    first, steps, thread = await xid_run(h, payload("xid79_firing.json"))
    assert first.status is RunStatus.SUCCEEDED
    assert (steps["history"], steps["reset"], steps["reboot"]) == (
        "succeeded",
        "succeeded",
        "skipped",
    )
    assert "GPU history (GPU-9d33a01c" in thread
    assert "no earlier events recorded" in thread
    await post(h, payload("xid79_resolved.json"))

    h.clock.advance(timedelta(days=1))
    second, steps, thread = await xid_run(
        h, payload("xid79_firing.json", starts="2026-11-23T02:00:00Z")
    )
    assert second.incident_id != first.incident_id
    assert (steps["drain"], steps["reset"], steps["reboot"]) == (
        "succeeded",
        "skipped",
        "succeeded",
    )
    assert "already reset 1 time(s) in the last 7 d" in thread
    assert "Next: drain, reboot request" in thread
    node = await h.sim.kube.get_node(node="gpu-node-07")
    assert node.labels["gpubot.io/reboot-required"] == "true"

    history = await h.app.store.gpu_history(uuid=GPU_UUID)
    assert [(e.kind, e.result, e.incident_id) for e in history] == [
        ("xid", "", first.incident_id),
        ("reset", "ok", first.incident_id),
        ("diag", "pass", first.incident_id),  # verified before the first release
        ("xid", "", second.incident_id),
        ("reboot", "", second.incident_id),
    ]
    assert {(e.node, e.gpu_index, e.pci_bus_id) for e in history} == {
        ("gpu-node-07", 3, "0000:48:00.0")
    }
    assert history[1].actor == "U2"  # the approver who let the reset run


async def test_gpu_history_in_slack_lists_the_ledger_escaped(h: SlackHarness) -> None:
    """`/gpu history NODE` answers with each GPU's events and incidents; text from outside
    (a diagnostics detail here) reaches Slack escaped, pinging nobody."""
    at = h.clock.now()
    await h.app.store.record_gpu_event(
        uuid=GPU_UUID,
        node="gpu-node-07",
        kind="xid",
        at=at,
        gpu_index=3,
        xid=79,
        incident_id="inc-00000000a1",
    )
    await h.app.store.record_gpu_event(
        uuid=GPU_UUID,
        node="gpu-node-07",
        kind="diag",
        at=at,
        result="fail",
        detail="<!channel> memory",
    )
    assert (await h.slash("history gpu-node-07")).status_code == 200
    await h.standin.wait_for(lambda: any(c.method == "response_url" for c in h.standin.calls))
    [call] = [c for c in h.standin.calls if c.method == "response_url"]
    text = json.dumps(call.args["blocks"])
    assert "GPU history of gpu-node-07: 1 GPU(s)" in text
    assert f"{GPU_UUID} (gpu-node-07, GPU 3)" in text
    assert "inc-00000000a1" in text
    assert "XID 79" in text
    assert "&lt;!channel&gt; memory" in text
    assert "<!channel>" not in text


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("history", "usage: `/gpu history &lt;node|GPU-uuid&gt;`"),
        ("history gpu-node-07 extra", "usage: `/gpu history &lt;node|GPU-uuid&gt;`"),
        ("history $(reboot)", "is not a valid Kubernetes node name"),
        (f"history {GPU_UUID}", "nothing recorded"),
    ],
)
async def test_gpu_history_usage_and_empty(h: SlackHarness, text: str, expect: str) -> None:
    """Bad arguments get a one-line usage; a GPU with no events says so."""
    await h.slash(text)
    await h.standin.wait_for(lambda: any(c.method == "response_url" for c in h.standin.calls))
    [call] = [c for c in h.standin.calls if c.method == "response_url"]
    assert expect in json.dumps(call.args)


async def test_two_reboots_send_the_gpu_to_service_and_stop_remediation(h: SlackHarness) -> None:
    """gpud's practice, max_reboots 2: a GPU already rebooted twice for XID 79 gets no third
    remedy. The run quarantines the node (cordon and taint stay automatic), drains, resets and
    reboots nothing, marks it for service and hands it to a person. While the mark is open, a
    later XID on that GPU does the same and the mark is not recorded twice."""
    now = h.clock.now()
    for days in (3, 1):
        await h.app.store.record_gpu_event(
            uuid=GPU_UUID,
            node="gpu-node-07",
            kind="reboot",
            at=now - timedelta(days=days),
            gpu_index=3,
            xid=79,
        )
    first, steps, thread = await xid_run(h, payload("xid79_firing.json"))
    assert first.status is RunStatus.SUCCEEDED
    assert {s: steps[s] for s in ("cordon", "taint", "drain", "reset", "reboot", "rma")} == {
        "cordon": "succeeded",
        "taint": "succeeded",
        "drain": "skipped",
        "reset": "skipped",
        "reboot": "skipped",
        "rma": "succeeded",
    }
    assert await h.app.store.approvals_for(first.id) == []  # nothing was asked, or done
    assert "already rebooted 2 time(s) for XID 79" in thread
    assert "A human takes it from here" in thread
    node = await h.sim.kube.get_node(node="gpu-node-07")
    assert node.unschedulable
    assert node.labels["gpubot.io/hardware-service"] == "rma"
    await post(h, payload("xid79_resolved.json"))

    h.clock.advance(timedelta(days=1))
    second, steps, thread = await xid_run(
        h, payload("xid79_firing.json", starts="2026-11-23T02:00:00Z")
    )
    assert (steps["drain"], steps["reset"], steps["rma"]) == ("skipped", "skipped", "succeeded")
    assert "the GPU is marked for service since 2026-11-22 09:00Z" in thread
    kinds = [(e.kind, e.incident_id) for e in await h.app.store.gpu_history(uuid=GPU_UUID)]
    assert kinds[2:] == [
        ("xid", first.incident_id),
        ("service", first.incident_id),
        ("xid", second.incident_id),
    ]


async def test_a_repeat_of_xid13_on_one_gpu_asks_for_diagnostics(h: SlackHarness) -> None:
    """NVIDIA's catalog for XID 13: the first one on a GPU is the application's to check; the
    same XID on the same GPU again within xid_repeat_window asks approval to run DCGM
    diagnostics on that GPU, and the thread says why."""
    first = json.loads(payload("xid79_firing.json"))
    for alert in first["alerts"]:
        alert["labels"] |= {"xid": "13", "namespace": "ml", "pod": "trainer-0"}
    await post(h, json.dumps(first).encode())
    [run] = await h.app.store.list_runs()
    steps = {s.step_id: s.status.value for s in await h.app.store.steps(run.id)}
    assert (steps["history"], steps["tell-owner"], steps["diagnose"]) == (
        "succeeded",
        "succeeded",
        "skipped",
    )
    said = " ".join(m.text for m in h.standin.messages.values())
    assert "first XID 13 on this GPU in 7 d: check the application" in said
    for alert in first["alerts"]:
        alert["status"] = "resolved"
        alert["endsAt"] = "2026-11-22T02:10:00Z"
    await post(h, json.dumps(first).encode())

    h.clock.advance(timedelta(days=2))
    for alert in first["alerts"]:
        alert |= {"status": "firing", "endsAt": "0001-01-01T00:00:00Z"}
        alert["startsAt"] = "2026-11-24T02:00:00Z"
    await post(h, json.dumps(first).encode())
    [second] = [r for r in await h.app.store.list_runs() if r.id != run.id]
    steps = {s.step_id: s.status.value for s in await h.app.store.steps(second.id)}
    assert steps["diagnose"] == "waiting_approval"
    said = " ".join(m.text for m in h.standin.messages.values())
    assert "XID 13 again on the same GPU" in said
    assert "run DCGM diagnostics" in said
    [request] = await h.app.store.approvals_for(second.id)
    assert request.step_id == "diagnose"
    xids = [e.xid for e in await h.app.store.gpu_history(uuid=GPU_UUID) if e.kind == "xid"]
    assert xids == [13, 13]
