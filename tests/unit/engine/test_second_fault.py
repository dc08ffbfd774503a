"""A second fault on a node: alerts of one node share one incident (one thread), and an
alert with another fault (another GPU or XID) becomes a follow-up incident with a run of its
own: at once when the node's run has ended, held (said in the thread, audited) while it acts,
and split off when it ends. A re-report of the same GPU and XID joins its incident."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.domain.runbooks.runs import RunStatus
from gpubot.engine.service import GpubotService

MakeHarness = Any  # the `harness` fixture in tests/unit/conftest.py
FIXTURES = Path(__file__).parents[2] / "fixtures" / "alertmanager"
XID79 = (Path(__file__).parents[3] / "runbooks" / "xid79.yaml").read_text()
NODE = "gpu-node-07"


def xid(h: Any, gpu: int, *, fingerprint: str | None = None) -> AlertmanagerPayload:
    """The captured XID 79 webhook for GPU `gpu` of gpu-node-07, as DCGM labels it: that
    GPU's index and UUID (read from the simulated cluster), a fingerprint of its own."""
    body = json.loads((FIXTURES / "xid79_firing.json").read_bytes())
    labels = body["alerts"][0]["labels"]
    labels.update(gpu=str(gpu), device=f"nvidia{gpu}")
    labels["UUID"] = h.cluster.snapshot().node(NODE).gpus[gpu].uuid
    body["alerts"][0]["fingerprint"] = fingerprint or f"7c0a5e21f4b3d9{gpu:02d}"
    return AlertmanagerPayload.model_validate(body)


async def deliver(service: GpubotService, payload: AlertmanagerPayload) -> None:
    await service.process(await service.ingest(payload))
    await service.wait_idle()


async def approve_all(h: Any, run_id: str) -> None:
    """Approve every step the run asks for until it ends."""
    while (await h.run_of(run_id)).status.value == "waiting_approval":
        ask = h.notifier.of("ask_approval")[-1]
        await h.service.vote(approval_id=ask.approval_id, user="U1", decision="approve")
        await h.service.wait_idle()


async def test_a_second_gpu_after_the_first_run_ended_gets_its_own_run(
    harness: MakeHarness,
) -> None:
    """GPU 3's run has finished (node released) while its alert still fires; XID 79 on GPU 5
    joins the node's incident, is split off into a follow-up incident at once, and its run
    quarantines the node again; the first thread says where it went."""
    h = harness(XID79)
    inject_xid(h.cluster, node=NODE, gpu=3)
    await deliver(h.service, xid(h, 3))
    [first] = await h.store.list_runs()
    await approve_all(h, first.id)
    assert (await h.run_of(first.id)).status.value == "succeeded"
    assert not (await h.cluster.kube.get_node(node=NODE)).unschedulable

    inject_xid(h.cluster, node=NODE, gpu=5)
    await deliver(h.service, xid(h, 5))
    incidents = await h.store.list_incidents()
    assert len(incidents) == 2
    second = next(r for r in await h.store.list_runs() if r.id != first.id)
    assert second.incident_id != first.incident_id
    assert second.context["params"]["gpu"] == "5"
    assert (await h.step_status(second.id))["cordon"] == "succeeded"
    assert (await h.cluster.kube.get_node(node=NODE)).unschedulable
    assert f"is incident {second.incident_id}, with its own thread and run" in h.notifier.text()
    [moved] = await h.store.alerts_for(second.incident_id)
    assert moved.labels["gpu"] == "5"


async def test_a_second_gpu_while_a_run_acts_on_the_node_is_held_then_runs(
    harness: MakeHarness,
) -> None:
    """GPU 3's run waits for its drain approval; XID 79 on GPU 5 is held (one message, one
    audit event), and becomes a follow-up incident with its own run when GPU 3's run ends."""
    h = harness(XID79)
    inject_xid(h.cluster, node=NODE, gpu=3)
    await deliver(h.service, xid(h, 3))
    [first] = await h.store.list_runs()
    inject_xid(h.cluster, node=NODE, gpu=5)
    await deliver(h.service, xid(h, 5))

    assert len(await h.store.list_incidents()) == 1
    assert [r.id for r in await h.store.list_runs()] == [first.id]
    assert "New fault held" in h.notifier.text()
    assert f"Run {first.id} is acting on the node now" in h.notifier.text()
    held = [e for e in await h.store.events() if e.kind == "fault.held"]
    assert len(held) == 1
    assert held[0].args["fault"].endswith("xid 79")

    await h.service.cancel(run_id=first.id, user="U1", reason="taking it", user_groups=())
    await h.service.wait_idle()
    runs = await h.store.list_runs()
    assert len(runs) == 2
    second = next(r for r in runs if r.id != first.id)
    assert second.incident_id != first.incident_id
    assert second.context["params"]["gpu"] == "5"


async def test_the_same_gpu_and_xid_reported_again_joins_its_incident(
    harness: MakeHarness,
) -> None:
    """A new fingerprint for the same GPU and XID (a label changed upstream) is the same
    fault: it joins the incident, and no second run starts."""
    h = harness(XID79)
    inject_xid(h.cluster, node=NODE, gpu=3)
    await deliver(h.service, xid(h, 3))
    await deliver(h.service, xid(h, 3, fingerprint="00000000000000aa"))
    assert len(await h.store.list_incidents()) == 1
    assert len(await h.store.list_runs()) == 1
    assert not [e for e in await h.store.events() if e.kind == "fault.held"]


async def test_a_fault_held_before_a_restart_is_split_off_at_start(harness: MakeHarness) -> None:
    """Held while the run acted; the run ended (recorded by a process that then died before
    it split anything off): at start, recovery finds the open incident's other fault still
    firing and gives it its follow-up incident and run."""
    h = harness(XID79)
    inject_xid(h.cluster, node=NODE, gpu=3)
    await deliver(h.service, xid(h, 3))
    [first] = await h.store.list_runs()
    inject_xid(h.cluster, node=NODE, gpu=5)
    await deliver(h.service, xid(h, 5))
    await h.store.update_run(
        first.id, status=RunStatus.CANCELLED, note="ended elsewhere", now=h.clock.now()
    )
    assert len(await h.store.list_runs()) == 1
    restarted = GpubotService(h.service.e)
    await restarted.background.recover()
    await restarted.wait_idle()
    runs = await h.store.list_runs()
    assert len(runs) == 2
    assert next(r for r in runs if r.id != first.id).context["params"]["gpu"] == "5"


async def test_two_gpus_in_one_payload_run_the_first_and_hold_the_second(
    harness: MakeHarness,
) -> None:
    """Alertmanager groups both GPUs' XID 79 into one webhook: the first alert opens the
    node's incident and its run starts; the second is held behind that run, not run first."""
    h = harness(XID79)
    inject_xid(h.cluster, node=NODE, gpu=3)
    inject_xid(h.cluster, node=NODE, gpu=5)
    both = xid(h, 3)
    both.alerts.append(xid(h, 5).alerts[0])
    await deliver(h.service, both)
    [run] = await h.store.list_runs()
    assert run.context["params"]["gpu"] == "3"
    assert (await h.step_status(run.id))["drain"] == "waiting_approval"
    assert [e.args["fault"] for e in await h.store.events() if e.kind == "fault.held"] == [
        f"gpu {h.cluster.snapshot().node(NODE).gpus[5].uuid} xid 79"
    ]
