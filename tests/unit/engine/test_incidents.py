"""Alert → incident → run: dedup, resolution, stale alerts, blast radius, attempt caps, recovery."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gpubot.backends.simulated.scenarios import inject_xid, recover_node
from gpubot.domain.control.safety_caps import BlastRadius, Policy
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.domain.runbooks.runs import StepStatus
from gpubot.engine.service import GpubotService

MakeHarness = Any  # the `harness` fixture in conftest.py
FIXTURES = Path(__file__).parents[2] / "fixtures" / "alertmanager"
XID79 = (Path(__file__).parents[3] / "runbooks" / "xid79.yaml").read_text()


def payload(name: str) -> AlertmanagerPayload:
    return AlertmanagerPayload.model_validate_json((FIXTURES / name).read_bytes())


async def deliver(service: GpubotService, name: str) -> None:
    summary = await service.ingest(payload(name))
    await service.process(summary)
    await service.wait_idle()


async def test_xid79_quarantines_then_waits_for_drain_approval(harness: MakeHarness) -> None:
    """Scenario: XID 79 alert → incident → plan → auto quarantine → approval → drain → audit."""
    h = harness(XID79)
    inject_xid(h.cluster, node="gpu-node-07", gpu=3)
    await deliver(h.service, "xid79_firing.json")
    [run] = await h.store.list_runs()
    status = await h.step_status(run.id)
    assert {s: status[s] for s in ("check", "owner", "cordon", "taint", "notify", "drain")} == {
        "check": "succeeded",
        "owner": "succeeded",
        "cordon": "succeeded",
        "taint": "succeeded",
        "notify": "succeeded",
        "drain": "waiting_approval",
    }
    assert status["leave-alone"] == "skipped"
    node = await h.cluster.kube.get_node(node="gpu-node-07")
    assert node.unschedulable
    assert node.annotations["gpubot.io/cordoned-by"] == "system"
    assert any(t.key == "gpubot.io/xid" for t in node.taints)
    [ask] = h.notifier.of("ask_approval")
    await h.service.vote(approval_id=ask.approval_id, user="U1", decision="approve")
    await h.service.wait_idle()
    left = [p for p in await h.cluster.kube.list_pods(node="gpu-node-07") if not p.is_daemonset]
    assert left == []
    # Then the GPU reset, the untaint and the uncordon, each approved in turn.
    for step in ("reset", "untaint", "uncordon"):
        assert (await h.step_status(run.id))[step] == "waiting_approval"
        ask = h.notifier.of("ask_approval")[-1]
        await h.service.vote(approval_id=ask.approval_id, user="U1", decision="approve")
    assert (await h.run_of(run.id)).status.value == "succeeded"
    status = await h.step_status(run.id)
    assert status["verify"] == "succeeded"
    assert status["reboot"] == "skipped"
    node = await h.cluster.kube.get_node(node="gpu-node-07")
    assert not node.unschedulable
    assert not any(t.key == "gpubot.io/xid" for t in node.taints)
    kinds = [e.kind for e in await h.store.events(incident_id=run.incident_id)]
    assert kinds[:2] == ["incident.opened", "run.created"]
    assert kinds[-1] == "run.finished"
    assert await h.store.verify() == []
    assert "Audit trail" in h.notifier.text()


async def test_same_payload_twice_opens_one_incident_and_one_run(harness: MakeHarness) -> None:
    h = harness(XID79)
    inject_xid(h.cluster, node="gpu-node-07", gpu=3)
    await deliver(h.service, "xid79_firing.json")
    await deliver(h.service, "xid79_firing.json")
    assert len(await h.store.list_incidents()) == 1
    assert len(await h.store.list_runs()) == 1
    assert h.probe.calls == {}
    assert len(h.notifier.of("open_thread")) == 1


async def test_resolved_payload_resolves_and_cancels_pending_mutations(
    harness: MakeHarness,
) -> None:
    """The node recovered before anyone approved the drain: the drain never runs."""
    h = harness(XID79)
    inject_xid(h.cluster, node="gpu-node-07", gpu=3)
    await deliver(h.service, "xid79_firing.json")
    pods_before = await h.cluster.kube.list_pods(node="gpu-node-07")
    recover_node(h.cluster, node="gpu-node-07")
    await deliver(h.service, "xid79_resolved.json")
    [incident] = await h.store.list_incidents()
    assert incident.status.value == "resolved"
    [run] = await h.store.list_runs()
    assert (await h.run_of(run.id)).status.value == "cancelled"
    assert (await h.step_status(run.id))["drain"] == "cancelled"
    assert await h.cluster.kube.list_pods(node="gpu-node-07") == pods_before
    [ask] = h.notifier.of("ask_approval")
    with pytest.raises(Exception, match="already"):
        await h.service.vote(approval_id=ask.approval_id, user="U1", decision="approve")


async def test_replayed_alert_on_recovered_node_changes_nothing(harness: MakeHarness) -> None:
    """An old XID alert arriving when the node's GPUs read healthy: quarantine is skipped."""
    h = harness(XID79)
    await deliver(h.service, "xid79_firing.json")  # no XID injected: the node is healthy now
    [run] = await h.store.list_runs()
    status = await h.step_status(run.id)
    assert status["check"] == "succeeded"
    assert {status[s] for s in ("cordon", "taint", "notify", "drain")} == {"skipped"}
    assert not (await h.cluster.kube.get_node(node="gpu-node-07")).unschedulable


async def test_firing_resend_after_resolution_never_reopens(harness: MakeHarness) -> None:
    h = harness(XID79)
    inject_xid(h.cluster, node="gpu-node-07", gpu=3)
    await deliver(h.service, "xid79_firing.json")
    await deliver(h.service, "xid79_resolved.json")
    await deliver(h.service, "xid79_firing.json")  # Alertmanager retry of the old firing body
    [incident] = await h.store.list_incidents()
    assert incident.status.value == "resolved"
    assert len(await h.store.list_runs()) == 1


async def test_blast_radius_holds_cordon_until_capacity_returns(harness: MakeHarness) -> None:
    """With 1 node already cordoned and a cap of 1, the auto cordon is held, not run."""
    h = harness(XID79, policy=Policy(groups={}, blast=BlastRadius(max_cordoned_count=1)))
    await h.cluster.kube.set_unschedulable(
        node="gpu-node-01", value=True, actor="human", reason="x"
    )
    inject_xid(h.cluster, node="gpu-node-07", gpu=3)
    await deliver(h.service, "xid79_firing.json")
    [run] = await h.store.list_runs()
    held = await h.run_of(run.id)
    assert held.status.value == "held"
    assert "1 of 16 GPU nodes are already cordoned" in held.note
    assert not (await h.cluster.kube.get_node(node="gpu-node-07")).unschedulable
    await h.cluster.kube.set_unschedulable(
        node="gpu-node-01", value=False, actor="human", reason="x"
    )
    await h.service.background.tick()
    assert (await h.step_status(run.id))["cordon"] == "succeeded"


async def test_attempt_cap_refuses_a_fourth_run_on_the_same_node(harness: MakeHarness) -> None:
    h = harness(XID79)
    for _ in range(3):
        _plan, run = await h.service.start_command_run(
            runbook="xid79", args={"node": "gpu-node-05"}, requested_by="U1", cluster="sim"
        )
        assert run is not None
    await h.service.wait_idle()
    with pytest.raises(Exception, match="attempt cap: xid79 already ran 3 times on gpu-node-05"):
        await h.service.start_command_run(
            runbook="xid79", args={"node": "gpu-node-05"}, requested_by="U1", cluster="sim"
        )


PROBE_RUN = """
name: probe-run
triggers: [{command: probe-run}]
steps:
  - {id: mutate, action: test.probe, args: {key: m}, approval: auto}
  - {id: after, action: test.probe, args: {key: after}, approval: auto}
"""


@pytest.mark.parametrize(
    ("applied", "check_state", "expected_calls", "expected_run"),
    [
        (True, None, {"after": 1}, "succeeded"),  # took effect: not run again
        (False, None, {"m": 1, "after": 1}, "succeeded"),  # did not: run once more
        (False, "unknown", {}, "needs_human"),  # cannot tell: a human decides
    ],
)
async def test_step_interrupted_mid_flight_is_checked_not_rerun_blindly(
    harness: MakeHarness,
    applied: bool,
    check_state: str | None,
    expected_calls: dict[str, int],
    expected_run: str,
) -> None:
    """A step left RUNNING by a crash: check() reads live state before anything runs again."""
    h = harness(PROBE_RUN)
    _plan, run = await h.service.start_command_run(
        runbook="probe-run", args={}, requested_by="U1", cluster="sim"
    )
    assert run is not None
    await h.service.wait_idle()
    # Rewind the store to the moment of the crash: `mutate` started, nothing after it.
    steps = await h.store.steps(run.id)
    await h.store.save_step(replace(steps[0], status=StepStatus.RUNNING, output={}))
    await h.store.save_step(replace(steps[1], status=StepStatus.PENDING, output={}))
    await h.store.update_run(run.id, status=run.status, note="", now=h.clock.now())
    h.probe.calls.clear()
    if not applied:
        h.probe.applied.clear()
    h.probe.check_state = check_state
    restarted = GpubotService(h.service.e)  # a new process over the same store and cluster
    await restarted.background.recover()
    await restarted.wait_idle()
    assert h.probe.calls == expected_calls
    assert (await h.store.get_run(run.id)).status.value == expected_run
    assert any(e.kind == "step.recovered" for e in await h.store.events())


async def test_an_opened_incident_is_followed_up_without_reading_it_again(
    harness: MakeHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The opening's outcome carries the incident its intake wrote: threads, audit and runs
    start from it, with no read of the incident of their own (one transaction fewer per
    alert in a storm)."""
    h = harness(XID79)
    inject_xid(h.cluster, node="gpu-node-07", gpu=3)

    async def no_read(incident_id: str) -> Any:
        raise AssertionError(f"incident {incident_id} read again")

    monkeypatch.setattr(h.store, "get_incident", no_read)
    summary = await h.service.ingest(payload("xid79_firing.json"))
    [opened] = summary.outcomes
    assert opened.incident is not None
    await h.service.process(summary)
    await h.service.wait_idle()
    [run] = await h.store.list_runs()
    assert run.incident_id == opened.incident_id
    assert (await h.step_status(run.id))["cordon"] == "succeeded"
