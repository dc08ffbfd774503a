"""XID 79 end to end through the real client against the stand-in API server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kube_engine import FakeAgent, KubeBot, make_bot, xid_payload
from kube_standin import KubeStandin

from gpubot.backends.store import SqlStore, open_store
from gpubot.domain.cluster import CORDON_BY_ANNOTATION
from gpubot.domain.policy import BlastRadius
from gpubot.domain.runs import RunStatus

NODE = "gpu-node-07"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlStore]:
    s = open_store(f"sqlite:///{tmp_path}/bot.db")
    yield s
    await s.close()


def _cluster(standin: KubeStandin, nodes: int = 10) -> None:
    for i in range(1, nodes + 1):
        standin.add_node(f"gpu-node-{i:02d}")
    for i in range(3):
        standin.add_pod(
            "ml",
            f"train-5c8d-{i}",
            node=NODE,
            gpus=2,
            owner=("ReplicaSet", "train-5c8d"),
            labels={"app": "train", "pod-template-hash": "5c8d"},
        )
    standin.add_pod(
        "ml", "ps-0", node=NODE, gpus=1, owner=("StatefulSet", "ps"), labels={"app": "ps"}
    )
    standin.add_pdb("ml", "ps-pdb", selector={"app": "ps"}, min_available=1)
    standin.add_pod("kube-system", "dcgm-exporter-x", node=NODE, owner=("DaemonSet", "dcgm"))
    standin.add_pod(
        "kube-system",
        f"static-{NODE}",
        node=NODE,
        annotations={"kubernetes.io/config.mirror": "abc"},
    )


async def _to_drain_approval(bot: KubeBot) -> str:
    bot.agent.lose(NODE, 3)
    await bot.deliver(xid_payload([NODE]))
    [run] = await bot.store.list_runs()
    assert run.status is RunStatus.WAITING_APPROVAL
    return run.id


async def test_xid79_quarantine_drain_with_pdb_reset_verify_release(
    standin: KubeStandin, store: SqlStore
) -> None:
    _cluster(standin)
    bot = make_bot(standin, store)
    run_id = await _to_drain_approval(bot)
    node = standin.nodes[NODE]
    assert node["spec"]["unschedulable"] is True
    assert node["metadata"]["annotations"][CORDON_BY_ANNOTATION] == "system"
    assert {"key": "gpubot.io/xid", "value": "79", "effect": "NoSchedule"} in node["spec"]["taints"]

    assert await bot.approve_pending(run_id) == "drain"
    await asyncio.sleep(1.5)
    # The PDB holds ps-0 until its StatefulSet has a healthy replica elsewhere.
    assert standin.pods_on(NODE) == sorted(
        ["ml/ps-0", "kube-system/dcgm-exporter-x", f"kube-system/static-{NODE}"]
    )
    assert any("blocked by PDB ps-pdb" in m for m in bot.notifier.text().splitlines())
    standin.add_pod("ml", "ps-1", node="gpu-node-02", gpus=1, labels={"app": "ps"})
    await bot.wait_status(run_id, RunStatus.WAITING_APPROVAL)
    await bot.service.wait_idle()
    assert standin.pods_on(NODE) == ["kube-system/dcgm-exporter-x", f"kube-system/static-{NODE}"]
    evictions = standin.calls_of("POST", "/eviction")
    assert {e.split("/")[6] for e in evictions} == {
        "train-5c8d-0",
        "train-5c8d-1",
        "train-5c8d-2",
        "ps-0",
    }

    for expected in ("reset", "untaint", "uncordon"):
        await bot.wait_status(run_id, RunStatus.WAITING_APPROVAL)
        await bot.service.wait_idle()
        assert await bot.approve_pending(run_id) == expected
    await bot.wait_status(run_id, RunStatus.SUCCEEDED)
    await bot.service.wait_idle()
    assert bot.agent.resets == [(NODE, 3)]
    node = standin.nodes[NODE]
    assert not node["spec"].get("unschedulable")
    assert CORDON_BY_ANNOTATION not in node["metadata"]["annotations"]
    assert node["spec"]["taints"] == []
    reasons = [e["reason"] for e in standin.events]
    assert reasons == ["GpubotCordon", "GpubotTaint", "GpubotUntaint", "GpubotUncordon"]

    events = await store.events()
    finished = [e.step for e in events if e.kind == "step.finished"]
    for step in ("cordon", "taint", "drain", "reset", "verify", "untaint", "uncordon"):
        assert step in finished
    started = [e.step for e in events if e.kind == "step.started"]
    assert sorted(started) == sorted(finished)
    assert await store.verify() == []


async def test_manual_uncordon_during_the_drain_pauses_the_run(
    standin: KubeStandin, store: SqlStore
) -> None:
    _cluster(standin)
    bot = make_bot(standin, store)
    run_id = await _to_drain_approval(bot)
    await bot.approve_pending(run_id)
    await asyncio.sleep(0.5)  # ps-0 is blocked by its PDB: the drain is waiting
    with standin.lock:
        standin.nodes[NODE]["spec"]["unschedulable"] = False  # kubectl uncordon
    await bot.wait_status(run_id, RunStatus.NEEDS_HUMAN, limit=10)
    await bot.service.wait_idle()
    run = await store.get_run(run_id)
    assert "made schedulable by someone during the drain" in run.note
    assert "Run paused at step drain" in bot.notifier.text()
    assert {s.step_id: s.status.value for s in await store.steps(run_id)}["drain"] == "needs_human"


async def test_node_cordoned_by_someone_else_is_left_alone(
    standin: KubeStandin, store: SqlStore
) -> None:
    _cluster(standin)
    with standin.lock:
        standin.nodes[NODE]["spec"]["unschedulable"] = True
    bot = make_bot(standin, store)
    bot.agent.lose(NODE, 3)
    await bot.deliver(xid_payload([NODE]))
    [run] = await store.list_runs()
    assert run.status is RunStatus.SUCCEEDED
    steps = {s.step_id: s.status.value for s in await store.steps(run.id)}
    assert steps["leave-alone"] == "succeeded"
    assert steps["cordon"] == steps["taint"] == steps["drain"] == "skipped"
    assert "gpubot leaves it alone" in bot.notifier.text()
    assert [c for c in standin.calls_of("PATCH", "/nodes/") if "dryRun=All" not in c] == []


async def test_reset_that_fails_requests_a_reboot(standin: KubeStandin, store: SqlStore) -> None:
    _cluster(standin)
    bot = make_bot(standin, store, agent=FakeAgent(reset_fails=True))
    standin.add_pod("ml", "ps-1", node="gpu-node-02", gpus=1, labels={"app": "ps"})
    run_id = await _to_drain_approval(bot)
    for expected in ("drain", "reset", "reboot"):
        await bot.wait_status(run_id, RunStatus.WAITING_APPROVAL)
        await bot.service.wait_idle()
        assert await bot.approve_pending(run_id) == expected
    await bot.wait_status(run_id, RunStatus.FAILED, RunStatus.SUCCEEDED)
    await bot.service.wait_idle()
    labels = standin.nodes[NODE]["metadata"]["labels"]
    assert labels["gpubot.io/reboot-required"] == "true"
    assert standin.nodes[NODE]["spec"]["unschedulable"] is True


async def test_fifty_alerts_with_a_ten_percent_cap_cordon_five(
    standin: KubeStandin, store: SqlStore
) -> None:
    nodes = [f"gpu-node-{i:02d}" for i in range(1, 51)]
    for name in nodes:
        standin.add_node(name)
    bot = make_bot(
        standin, store, blast=BlastRadius(max_cordoned_fraction=0.1, max_cordoned_count=50)
    )
    for name in nodes:
        bot.agent.lose(name, 0)
    await bot.deliver(xid_payload(nodes))
    runs = await store.list_runs()
    assert len(runs) == 50
    cordoned = [n for n, o in standin.nodes.items() if o["spec"].get("unschedulable")]
    assert len(cordoned) == 5
    held = [r for r in runs if r.status is RunStatus.HELD]
    assert len(held) == 45
    assert all("blast radius" in r.note for r in held)
    assert bot.notifier.text().count("is held") >= 45
