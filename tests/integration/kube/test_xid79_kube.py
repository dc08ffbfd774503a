"""XID 79 end to end through the real client against a real API server with etcd and the
disruption controller: real PDB 429s, real cordon and taint patches, real Events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kube_cluster import Cluster, kubelet_for
from kube_engine import FakeAgent, cluster_bot, xid_payload
from waiting import eventually
from xid79_flow import evictions, quarantine_drain_reset_release, to_drain_approval, xid_scene

from gpubot.backends.store import SqlStore, open_store
from gpubot.domain.control.safety_caps import BlastRadius
from gpubot.domain.runbooks.runs import RunStatus


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlStore]:
    s = open_store(f"sqlite:///{tmp_path}/bot.db")
    yield s
    await s.close()


async def test_xid79_quarantine_drain_with_pdb_reset_verify_release(
    cluster: Cluster, store: SqlStore
) -> None:
    scene = xid_scene(cluster)
    bot = cluster_bot(cluster, store)
    with kubelet_for(cluster, scene.node):
        await quarantine_drain_reset_release(bot, cluster, scene)


async def test_manual_uncordon_during_the_drain_pauses_the_run(
    cluster: Cluster, store: SqlStore
) -> None:
    scene = xid_scene(cluster)
    bot = cluster_bot(cluster, store)
    with kubelet_for(cluster, scene.node):
        run_id = await to_drain_approval(bot, scene)
        await bot.approve_pending(run_id)
        # ps-0 is blocked by its PDB: the drain is waiting.
        await eventually(lambda: ("ps-0", 429) in evictions(cluster), "the PDB's 429 for ps-0")
        cluster.uncordon(scene.node)  # kubectl uncordon
        await bot.wait_status(run_id, RunStatus.NEEDS_HUMAN)
        await bot.service.wait_idle()
    run = await store.get_run(run_id)
    assert "made schedulable by someone during the drain" in run.note
    assert "Run paused at step drain" in bot.notifier.text()
    assert {s.step_id: s.status.value for s in await store.steps(run_id)}["drain"] == "needs_human"
    assert f"{scene.ml}/ps-0" in cluster.pods_on(scene.node)


async def test_node_cordoned_by_someone_else_is_left_alone(
    cluster: Cluster, store: SqlStore
) -> None:
    scene = xid_scene(cluster, nodes=8)
    cluster.cordon(scene.node)
    bot = cluster_bot(cluster, store)
    bot.agent.lose(scene.node, 3)
    await bot.deliver(xid_payload([scene.node]))
    [run] = await store.list_runs()
    assert run.status is RunStatus.SUCCEEDED
    steps = {s.step_id: s.status.value for s in await store.steps(run.id)}
    assert steps["leave-alone"] == "succeeded"
    assert steps["cordon"] == steps["taint"] == steps["drain"] == "skipped"
    assert "gpubot leaves it alone" in bot.notifier.text()
    assert [p for p in cluster.calls_of("PATCH", "/nodes/") if "dryRun=All" not in p] == []
    assert cluster.node(scene.node)["spec"]["unschedulable"] is True


async def test_reset_that_fails_requests_a_reboot(cluster: Cluster, store: SqlStore) -> None:
    scene = xid_scene(cluster, nodes=8)
    cluster.add_pod(scene.ml, "ps-1", node=scene.spare, gpus=1, labels={"app": "ps"})
    cluster.wait_pdb(scene.ml, "ps-pdb", healthy=2)
    bot = cluster_bot(cluster, store, agent=FakeAgent(reset_fails=True))
    with kubelet_for(cluster, scene.node):
        run_id = await to_drain_approval(bot, scene)
        for expected in ("drain", "reset", "reboot"):
            await bot.wait_status(run_id, RunStatus.WAITING_APPROVAL)
            await bot.service.wait_idle()
            assert await bot.approve_pending(run_id) == expected
        await bot.wait_status(run_id, RunStatus.FAILED, RunStatus.SUCCEEDED)
        await bot.service.wait_idle()
    node = cluster.node(scene.node)
    assert node["metadata"]["labels"]["gpubot.io/reboot-required"] == "true"
    assert node["spec"]["unschedulable"] is True


async def test_fifty_alerts_with_a_ten_percent_cap_cordon_five(
    cluster: Cluster, store: SqlStore
) -> None:
    nodes = [cluster.add_node(f"gpu-node-{i:02d}") for i in range(1, 51)]
    bot = cluster_bot(
        cluster, store, blast=BlastRadius(max_cordoned_fraction=0.1, max_cordoned_count=50)
    )
    for name in nodes:
        bot.agent.lose(name, 0)
    await bot.deliver(xid_payload(nodes))
    runs = await store.list_runs()
    assert len(runs) == 50
    listed = cluster.core.list_node().items
    cordoned = [n.metadata.name for n in listed if n.spec.unschedulable]
    assert len(cordoned) == 5
    held = [r for r in runs if r.status is RunStatus.HELD]
    assert len(held) == 45
    assert all("blast radius" in r.note for r in held)
    # The channel is told why (in what words and how many messages is the notifier's business).
    assert "blast" in bot.notifier.text().lower()
