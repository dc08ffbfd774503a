"""The thermal runbook on the simulated cluster: cap with approval, escalate, revert durably."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from gpubot.backends.simulated.scenarios import thermal_runaway
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.domain.runbooks.runs import RunStatus, StepStatus
from gpubot.engine.service import GpubotService

MakeHarness = Any  # the `harness` fixture in conftest.py
THERMAL = (Path(__file__).parents[3] / "runbooks" / "thermal.yaml").read_text()
NODE, GPU = "gpu-node-03", 2


def thermal_alert(*, status: str = "firing") -> AlertmanagerPayload:
    labels = {
        "alertname": "GPUTemperatureHigh",
        "Hostname": NODE,
        "gpu": str(GPU),
        "UUID": "GPU-thermal",
        "modelName": "NVIDIA H100 80GB HBM3",
        "cluster": "sim",
        "severity": "warning",
    }
    alert = {
        "status": status,
        "labels": labels,
        "annotations": {"summary": f"GPU {GPU} on {NODE} above 85 °C for 5m"},
        "startsAt": "2026-11-22T08:50:00Z",
        "endsAt": "2026-11-22T09:40:00Z" if status == "resolved" else "0001-01-01T00:00:00Z",
        "fingerprint": "a1b2c3d4e5f60718",
    }
    return AlertmanagerPayload.model_validate(
        {
            "version": "4",
            "groupKey": '{}:{alertname="GPUTemperatureHigh"}',
            "status": status,
            "alerts": [alert],
        }
    )


async def _gpu(h: Any) -> Any:
    return (await h.cluster.agent.gpus(node=NODE))[GPU]


async def _approve_cap(h: Any) -> None:
    [ask] = h.notifier.of("ask_approval")
    assert "490 W" in ask.text
    assert "range 200-700 W" in ask.text
    await h.service.vote(approval_id=ask.approval_id, user="U1", decision="approve")
    await h.service.wait_idle()


async def test_alert_caps_with_approval_then_reverts_once_cool(harness: MakeHarness) -> None:
    h = harness(THERMAL)
    thermal_runaway(h.cluster, node=NODE, gpu=GPU, temperature_c=92)
    summary = await h.service.ingest(thermal_alert())
    await h.service.process(summary)
    [run] = await h.store.list_runs()
    status = await h.step_status(run.id)
    assert (status["check"], status["cap"]) == ("succeeded", "waiting_approval")
    assert (await _gpu(h)).power_limit_w == 700.0  # nothing before approval
    await _approve_cap(h)
    assert (await h.run_of(run.id)).status is RunStatus.SUCCEEDED
    assert await h.step_status(run.id) == {
        "check": "succeeded",
        "cap": "succeeded",
        "settle": "succeeded",
        "recheck": "succeeded",
        "facilities": "skipped",  # the cap was enough
        "cool": "succeeded",
        "revert": "succeeded",
        "reverted": "succeeded",
    }
    assert (await _gpu(h)).power_limit_w == 700.0
    events = await h.store.events(incident_id=run.incident_id)
    [capped] = [e for e in events if e.kind == "step.finished" and e.step == "cap"]
    assert (capped.result["previous_w"], capped.result["limit_w"]) == (700.0, 490.0)
    assert capped.actor == "U1"
    [reverted] = [e for e in events if e.kind == "step.finished" and e.step == "revert"]
    assert (reverted.result["previous_w"], reverted.result["limit_w"]) == (490.0, 700.0)
    [cool] = [e for e in events if e.kind == "step.finished" and e.step == "cool"]
    # 75 °C under the cap: below 85 °C for the default 10 minutes, then the revert.
    assert cool.result["reason"] == "cooled"
    assert cool.result["waited_seconds"] == 600.0
    assert await h.store.verify() == []


async def test_still_hot_escalates_to_facilities_and_reverts_at_max_wait(
    harness: MakeHarness,
) -> None:
    h = harness(THERMAL)
    thermal_runaway(h.cluster, node=NODE, gpu=GPU, temperature_c=92)
    _plan, run = await h.service.start_command_run(
        runbook="thermal",
        args={"node": NODE, "gpu": str(GPU), "threshold_c": "70", "max_wait": "20m"},
        requested_by="U3",
        cluster="sim",
    )
    assert run is not None
    await h.service.wait_idle()
    await _approve_cap(h)
    status = await h.step_status(run.id)
    assert status["facilities"] == "succeeded"
    assert "fans" in h.notifier.text()
    assert "ambient" in h.notifier.text()
    states = {s.step_id: s for s in await h.store.steps(run.id)}
    assert states["cool"].output["reason"] == "max_wait"
    assert states["cool"].output["waited_seconds"] == 1200.0  # on time, by the fake clock
    assert states["cool"].output["still_hot"] is True
    assert (await _gpu(h)).power_limit_w == 700.0


async def _crash_during_cool(h: Any, run_id: str) -> Any:
    """Rewind the store to a crash while `cool` waited: GPU capped, revert not yet run."""
    states = {s.step_id: s for s in await h.store.steps(run_id)}
    cool = states["cool"]
    await h.store.save_step(replace(cool, status=StepStatus.RUNNING, output={}, finished_at=None))
    for later in ("revert", "reverted"):
        await h.store.save_step(
            replace(states[later], status=StepStatus.PENDING, output={}, args={}, attempts=0)
        )
    await h.store.update_run(run_id, status=RunStatus.RUNNING, note="", now=h.clock.now())
    await h.cluster.agent.set_power_limit(node=NODE, gpu=GPU, watts=490.0)
    assert cool.started_at is not None
    return cool.started_at


async def test_revert_after_a_restart_past_the_deadline_happens_at_once(
    harness: MakeHarness,
) -> None:
    h = harness(THERMAL)
    thermal_runaway(h.cluster, node=NODE, gpu=GPU, temperature_c=92)
    _plan, run = await h.service.start_command_run(
        runbook="thermal",
        args={"node": NODE, "gpu": str(GPU), "threshold_c": "70"},
        requested_by="U3",
        cluster="sim",
    )
    assert run is not None
    await h.service.wait_idle()
    await _approve_cap(h)
    started = await _crash_during_cool(h, run.id)
    # The bot was down for longer than max_wait (30m): the revert is due at once on restart.
    h.clock.advance(started + timedelta(minutes=45) - h.clock.now())
    h.clock.slept.clear()
    restarted = GpubotService(h.service.e)
    await restarted.background.recover()
    await restarted.wait_idle()
    assert h.clock.slept == []
    assert (await _gpu(h)).power_limit_w == 700.0
    assert (await h.store.get_run(run.id)).status is RunStatus.SUCCEEDED
    states = {s.step_id: s for s in await h.store.steps(run.id)}
    assert states["cool"].started_at == started  # the first start is kept
    assert states["cool"].output["reason"] == "max_wait"


async def test_restart_mid_wait_waits_only_for_what_is_left(harness: MakeHarness) -> None:
    h = harness(THERMAL)
    thermal_runaway(h.cluster, node=NODE, gpu=GPU, temperature_c=92)
    _plan, run = await h.service.start_command_run(
        runbook="thermal",
        args={"node": NODE, "gpu": str(GPU), "threshold_c": "70", "max_wait": "30m"},
        requested_by="U3",
        cluster="sim",
    )
    assert run is not None
    await h.service.wait_idle()
    await _approve_cap(h)
    started = await _crash_during_cool(h, run.id)
    h.clock.advance(started + timedelta(minutes=10) - h.clock.now())
    h.clock.slept.clear()
    restarted = GpubotService(h.service.e)
    await restarted.background.recover()
    await restarted.wait_idle()
    assert sum(h.clock.slept) == 20 * 60  # 30m from the first start, not from the restart
    assert (await _gpu(h)).power_limit_w == 700.0


async def test_revert_still_runs_when_the_alert_resolves(harness: MakeHarness) -> None:
    h = harness(THERMAL)
    thermal_runaway(h.cluster, node=NODE, gpu=GPU, temperature_c=92)
    await h.service.process(await h.service.ingest(thermal_alert()))
    await h.service.wait_idle()
    [run] = await h.store.list_runs()
    await h.service.process(await h.service.ingest(thermal_alert(status="resolved")))
    await h.service.wait_idle()
    await _approve_cap(h)
    # on_resolve: continue: the cap that was approved is followed by its revert.
    status = await h.step_status(run.id)
    assert (status["cap"], status["revert"]) == ("succeeded", "succeeded")
    assert (await _gpu(h)).power_limit_w == 700.0


async def test_cool_gpu_is_not_capped(harness: MakeHarness) -> None:
    h = harness(THERMAL)
    await h.service.process(await h.service.ingest(thermal_alert()))
    [run] = await h.store.list_runs()
    status = await h.step_status(run.id)
    assert status["check"] == "succeeded"
    assert {status[s] for s in status if s != "check"} == {"skipped"}
    assert h.notifier.of("ask_approval") == []
