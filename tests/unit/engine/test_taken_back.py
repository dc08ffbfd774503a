"""A node gpubot quarantined and a person put back in service (`kubectl uncordon`): the run
notices before its next mutating step, says so in the thread, stops, and frees the slot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.domain.control.safety_caps import BlastRadius, Policy
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.engine.service import GpubotService

MakeHarness = Any  # the `harness` fixture in tests/unit/conftest.py
FIXTURES = Path(__file__).parents[2] / "fixtures" / "alertmanager"
XID79 = (Path(__file__).parents[3] / "runbooks" / "xid79.yaml").read_text()


def xid79(node: str, *, status: str = "firing") -> AlertmanagerPayload:
    """The captured XID 79 webhook, for `node` (its own fingerprint), firing or resolved."""
    body = json.loads((FIXTURES / "xid79_firing.json").read_bytes())
    alert = body["alerts"][0]
    alert["labels"]["Hostname"] = node
    alert["fingerprint"] = f"{abs(hash(node)):016x}"[:16]
    alert["status"] = body["status"] = status
    if status == "resolved":
        alert["endsAt"] = "2026-11-22T02:10:00Z"
    return AlertmanagerPayload.model_validate(body)


async def deliver(service: GpubotService, payload: AlertmanagerPayload) -> None:
    await service.process(await service.ingest(payload))
    await service.wait_idle()


async def test_a_hand_uncordon_stops_the_run_and_says_what_is_left(harness: MakeHarness) -> None:
    h = harness(XID79)
    inject_xid(h.cluster, node="gpu-node-07", gpu=3)
    await deliver(h.service, xid79("gpu-node-07"))
    [run] = await h.store.list_runs()
    assert (await h.step_status(run.id))["drain"] == "waiting_approval"

    # `kubectl uncordon gpu-node-07`: gpubot's taint stays, as kubectl leaves it.
    await h.cluster.kube.set_unschedulable(
        node="gpu-node-07", value=False, actor="kubectl", reason=""
    )
    await h.service.background.tick()
    await h.service.wait_idle()

    done = await h.run_of(run.id)
    assert done.status.value == "cancelled"
    assert "gpu-node-07 was uncordoned outside this run" in done.note
    assert "waited at step drain" in done.note
    assert "kubectl taint node gpu-node-07 gpubot.io/xid-" in done.note
    status = await h.step_status(run.id)
    assert status["drain"] == "cancelled"
    [ask] = h.notifier.of("ask_approval")
    assert (await h.store.get_approval(ask.approval_id)).status.value != "pending"
    assert "was uncordoned outside this run" in h.notifier.text()
    kinds = [e.kind for e in await h.store.events(run_id=run.id)]
    assert "run.cancelled" in kinds
    # Nothing more was done to the node: not drained, not cordoned again.
    assert not (await h.cluster.kube.get_node(node="gpu-node-07")).unschedulable
    pods = [p for p in await h.cluster.kube.list_pods(node="gpu-node-07") if not p.is_daemonset]
    assert pods


async def test_nodes_taken_back_by_hand_free_their_slots_for_the_next_alert(
    harness: MakeHarness,
) -> None:
    """Cap 4. Four XID alerts quarantine four nodes; each resolves and a person uncordons
    the node at once. The fifth alert's node is cordoned, not held."""
    h = harness(XID79, policy=Policy(groups={}, blast=BlastRadius(max_cordoned_count=4)))
    nodes = [f"gpu-node-{i:02d}" for i in range(1, 6)]
    for node in nodes[:4]:
        inject_xid(h.cluster, node=node, gpu=3)
        await deliver(h.service, xid79(node))
        await deliver(h.service, xid79(node, status="resolved"))
        await h.cluster.kube.set_unschedulable(node=node, value=False, actor="kubectl", reason="")
    inject_xid(h.cluster, node=nodes[4], gpu=3)
    await deliver(h.service, xid79(nodes[4]))
    runs = {r.target: r for r in await h.store.list_runs()}
    assert (await h.step_status(runs[nodes[4]].id))["cordon"] == "succeeded"
    assert (await h.cluster.kube.get_node(node=nodes[4])).unschedulable
