"""The XID 79 scene on a real API server, and the runbook driven through it to the end: shared
by the AlwaysAllow tests and the RBAC test, which runs it as the shipped ClusterRole."""

from __future__ import annotations

from dataclasses import dataclass

from kube_cluster import Cluster
from kube_engine import KubeBot, xid_payload
from waiting import eventually

from gpubot.domain.fleet.cluster import CORDON_BY_ANNOTATION
from gpubot.domain.runbooks.runs import RunStatus

XID_TAINT = {"key": "gpubot.io/xid", "value": "79", "effect": "NoSchedule"}


@dataclass(frozen=True)
class XidScene:
    node: str  # the node whose GPU fell off the bus
    spare: str  # another node, where a StatefulSet replica can come up
    ml: str
    system: str


def xid_scene(c: Cluster, nodes: int = 10) -> XidScene:
    """A fleet of GPU nodes; on gpu-node-07 three Deployment pods, a StatefulSet pod guarded
    by a PDB (minAvailable 1, so it blocks until a replica runs elsewhere), a DaemonSet pod
    and a static pod, all Running and Ready."""
    for i in range(1, nodes + 1):
        c.add_node(f"gpu-node-{i:02d}")
    node, spare = c.name("gpu-node-07"), c.name("gpu-node-02")
    ml, system = c.namespace("ml"), c.namespace("system")
    for i in range(3):
        c.add_pod(
            ml,
            f"train-5c8d-{i}",
            node=node,
            gpus=2,
            owner=("ReplicaSet", "train-5c8d"),
            labels={"app": "train", "pod-template-hash": "5c8d"},
        )
    c.add_pod(ml, "ps-0", node=node, gpus=1, owner=("StatefulSet", "ps"), labels={"app": "ps"})
    c.add_pdb(ml, "ps-pdb", selector={"app": "ps"}, min_available=1)
    c.add_pod(system, "dcgm-exporter-x", node=node, owner=("DaemonSet", "dcgm"))
    c.add_pod(
        system, f"static-{node}", node=node, annotations={"kubernetes.io/config.mirror": "abc"}
    )
    c.wait_pdb(ml, "ps-pdb", healthy=1)
    return XidScene(node, spare, ml, system)


async def to_drain_approval(bot: KubeBot, scene: XidScene) -> str:
    """The alert arrives: the node is checked, cordoned and tainted; the drain asks approval."""
    bot.agent.lose(scene.node, 3)
    await bot.deliver(xid_payload([scene.node]))
    [run] = await bot.store.list_runs()
    assert run.status is RunStatus.WAITING_APPROVAL, run.note
    return run.id


def evictions(c: Cluster) -> list[tuple[str, int]]:
    """(pod, status) of every eviction the bot's clients sent, in order."""
    return [
        (call.path.split("/")[6], call.status)
        for call in c.calls
        if call.path.endswith("/eviction")
    ]


async def quarantine_drain_reset_release(bot: KubeBot, c: Cluster, scene: XidScene) -> str:
    """The whole runbook: cordon and taint (auto), then drain held by the PDB's real 429s until
    a replica is Ready elsewhere, reset, verify, untaint and uncordon, each approved. Needs a
    `Kubelet` for scene.node, so that evicted pods finish terminating."""
    run_id = await to_drain_approval(bot, scene)
    node = c.node(scene.node)
    assert node["spec"]["unschedulable"] is True
    assert node["metadata"]["annotations"][CORDON_BY_ANNOTATION] == "system"
    assert node["spec"]["taints"] == [XID_TAINT]

    assert await bot.approve_pending(run_id) == "drain"
    stays = [f"{scene.system}/dcgm-exporter-x", f"{scene.system}/static-{scene.node}"]
    # The PDB holds ps-0 until its StatefulSet has a healthy replica elsewhere.
    await eventually(
        lambda: c.pods_on(scene.node, terminating=True) == sorted([f"{scene.ml}/ps-0", *stays]),
        "the Deployment pods to be evicted and gone",
    )
    await eventually(lambda: ("ps-0", 429) in evictions(c), "the PDB's 429 for ps-0")
    await eventually(lambda: "blocked by PDB ps-pdb" in bot.notifier.text(), "the blocked note")
    c.add_pod(scene.ml, "ps-1", node=scene.spare, gpus=1, labels={"app": "ps"})
    await bot.wait_status(run_id, RunStatus.WAITING_APPROVAL)
    await bot.service.wait_idle()
    assert c.pods_on(scene.node, terminating=True) == sorted(stays)
    # Each pod is evicted once: a pod already terminating is waited for, not evicted again.
    evicted = sorted(pod for pod, status in evictions(c) if status == 201)
    assert evicted == ["ps-0", "train-5c8d-0", "train-5c8d-1", "train-5c8d-2"]

    for expected in ("reset", "untaint", "uncordon"):
        await bot.wait_status(run_id, RunStatus.WAITING_APPROVAL)
        await bot.service.wait_idle()
        assert await bot.approve_pending(run_id) == expected
    await bot.wait_status(run_id, RunStatus.SUCCEEDED)
    await bot.service.wait_idle()
    assert bot.agent.resets == [(scene.node, 3)]
    node = c.node(scene.node)
    assert not node["spec"].get("unschedulable")
    assert CORDON_BY_ANNOTATION not in node["metadata"].get("annotations", {})
    assert not node["spec"].get("taints")
    assert c.node_events(scene.node) == [
        "GpubotCordon",
        "GpubotTaint",
        "GpubotUntaint",
        "GpubotUncordon",
    ]
    events = await bot.store.events()
    finished = [e.step for e in events if e.kind == "step.finished"]
    for step in ("cordon", "taint", "drain", "reset", "verify", "untaint", "uncordon"):
        assert step in finished
    started = [e.step for e in events if e.kind == "step.started"]
    assert sorted(started) == sorted(finished)
    assert await bot.store.verify() == []
    return run_id
