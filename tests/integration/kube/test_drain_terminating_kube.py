"""A drain on a real API server whose evicted pods never finish terminating (no kubelet runs
for the node, as when it hung after XID 79): each pod gets one eviction request, the node's
pods are listed a few times a minute at most, and after the bound the run is handed to a
human, or the runbook's force_delete_terminating deletes them with grace 0. Fake time."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kube_cluster import Call, Cluster
from kube_engine import KubeBot, cluster_bot

from gpubot.backends.store import open_store
from gpubot.domain.runbooks.runs import RunStatus
from gpubot.engine.clock import FakeClock
from gpubot.engine.service import GpubotService

RUNBOOK = """
name: drain-only
description: cordon and drain a node
triggers: [{command: drain-only}]
params: {node: {type: node}}
target: node
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
  - id: drain
    action: node.drain
    args: {node: "{{ params.node }}"%s}
    approval: required
    timeout: 10m
"""


def _bot(c: Cluster, tmp_path: Path, option: str = "") -> tuple[KubeBot, FakeClock]:
    (tmp_path / "drain-only.yaml").write_text(RUNBOOK % option)
    store = open_store(f"sqlite:///{tmp_path}/drain.db")
    bot = cluster_bot(c, store, runbooks=(tmp_path / "drain-only.yaml",))
    clock = FakeClock()
    bot.service = GpubotService(replace(bot.service.e, clock=clock))
    return bot, clock


def _scene(c: Cluster) -> tuple[str, list[str]]:
    for i in range(1, 5):
        c.add_node(f"gpu-node-{i:02d}")
    node, ml = c.name("gpu-node-03"), c.namespace("ml")
    pods = []
    for i in range(2):
        pods.append(
            c.add_pod(
                ml,
                f"train-5c8d-{i}",
                node=node,
                gpus=4,
                owner=("ReplicaSet", "train-5c8d"),
                labels={"app": "train", "pod-template-hash": "5c8d"},
            )
        )
    return node, [f"{ml}/{p}" for p in pods]


def _evictions(c: Cluster) -> list[Call]:
    return [call for call in c.calls if call.method == "POST" and call.path.endswith("/eviction")]


def _pod_lists(c: Cluster, node: str) -> list[Call]:
    return [
        call
        for call in c.calls
        if call.method == "GET" and "/pods?" in call.path and f"spec.nodeName%3D{node}" in call.path
    ]


async def _drain(bot: KubeBot, node: str) -> str:
    _plan, run = await bot.service.start_command_run(
        runbook="drain-only", args={"node": node}, requested_by="U9", cluster="sim"
    )
    assert run is not None
    await bot.service.wait_idle()
    assert await bot.approve_pending(run.id) == "drain"
    await bot.service.wait_idle()
    return run.id


async def test_pods_that_never_finish_terminating_get_one_eviction_each(
    cluster: Cluster, tmp_path: Path
) -> None:
    node, pods = _scene(cluster)
    bot, clock = _bot(cluster, tmp_path)
    lists_before = len(_pod_lists(cluster, node))
    try:
        run_id = await _drain(bot, node)
        run = await bot.store.get_run(run_id)
        drain = {s.step_id: s for s in await bot.store.steps(run_id)}["drain"]
    finally:
        await bot.store.close()

    # One eviction request per pod, each accepted, in five minutes of waiting.
    evictions = _evictions(cluster)
    assert sorted(c.path.split("/")[6] for c in evictions) == sorted(p.split("/")[1] for p in pods)
    assert {c.status for c in evictions} == {201}
    waited = sum(clock.slept)
    assert 300 <= waited < 340
    lists = len(_pod_lists(cluster, node)) - lists_before
    # Three plans (cordon, drain, the approval request's), the evicting round, one look
    # more, then one per wait.
    assert lists <= 5 + len(clock.slept)
    assert lists / (waited / 60) <= 4  # a few LISTs per minute, however long it is stuck
    # Still terminating on the server: the kubelet that would confirm it is gone.
    assert cluster.pods_on(node, terminating=True) == sorted(pods)
    assert cluster.pods_on(node) == []
    assert run.status is RunStatus.NEEDS_HUMAN
    assert "2 pod(s) still terminating after 5m" in drain.error
    assert f"the kubelet on {node} may be gone" in drain.error
    assert len(bot.notifier.text()) < 5000


async def test_the_runbook_may_delete_them_with_grace_zero(
    cluster: Cluster, tmp_path: Path
) -> None:
    node, pods = _scene(cluster)
    bot, clock = _bot(cluster, tmp_path, ", force_delete_terminating: true")
    try:
        run_id = await _drain(bot, node)
        run = await bot.store.get_run(run_id)
        drain = {s.step_id: s for s in await bot.store.steps(run_id)}["drain"]
    finally:
        await bot.store.close()

    assert run.status is RunStatus.SUCCEEDED, run.note
    assert len(_evictions(cluster)) == 2
    deletes = [c for c in cluster.calls if c.method == "DELETE" and "/pods/" in c.path]
    assert len(deletes) == 2
    assert cluster.pods_on(node, terminating=True) == []  # grace 0: gone on the server
    assert sorted(drain.output["deleted"]) == sorted(pods)
    assert 300 <= sum(clock.slept) < 340
