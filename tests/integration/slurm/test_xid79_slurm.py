"""XID 79 on a Slurm node, from the Alertmanager payload to resume, against real Slurm."""

from __future__ import annotations

from slurm_cluster import SlurmCluster
from slurm_engine import make_bot, xid_payload
from waiting import eventually

from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.backends.store import SqlStore
from gpubot.domain.runbooks.runs import RunStatus


async def _running(slurm: SlurmCluster, jobs: list[str]) -> None:
    await eventually(
        lambda: all(slurm.job_state(j) == "RUNNING" for j in jobs), f"jobs {jobs} to run"
    )


async def test_xid79_drain_requeue_reset_diag_resume(slurm: SlurmCluster, store: SqlStore) -> None:
    bot = make_bot(slurm, store)
    train = slurm.sbatch(
        "-w", "gpu001", "--gres=gpu:3", "-A", "physics", "-J", "train", "--wrap", "sleep 900"
    )
    other = slurm.sbatch("-w", "gpu002", "--gres=gpu:1", "--wrap", "sleep 900")
    await _running(slurm, [train, other])
    inject_xid(bot.gpus, node="gpu001", gpu=3)

    await bot.deliver(xid_payload("gpu001", 3))
    [run] = await store.list_runs()
    assert run.status is RunStatus.WAITING_APPROVAL, run.note
    assert await bot.pending(run.id) == "drain"
    # Quarantined: DRAIN with gpubot's reason naming the runbook, the run and the incident;
    # the job on it keeps running, and nothing new starts there.
    node = slurm.node_json("gpu001")
    assert slurm.operator_flags("gpu001") == ["DRAIN"]
    # Slurm has no taints: gpubot's XID taint is kept in its own reason.
    assert node["reason"] == (
        f"gpubot xid79/cordon run={run.id} incident={run.incident_id} [gpubot.io/xid=79:NoSchedule]"
    )
    assert slurm.node_state("gpu001") == "draining"
    assert slurm.job_state(train) == "RUNNING"
    # The drain's approval request lists the job as an HPC admin reads it.
    text = bot.notifier.text()
    assert "drain gpu001 in Slurm (State=DRAIN" in text
    assert f"requeue job {train} (user root, account physics, partition gpu, 3 GPU(s)" in text

    assert await bot.approve_pending(run.id) == "drain"
    await bot.wait_status(run.id, RunStatus.WAITING_APPROVAL, RunStatus.FAILED)
    await bot.service.wait_idle()
    assert await bot.pending(run.id) == "reset", (await store.get_run(run.id)).note
    # DRAINED before the reset is asked for; the job requeued (pending), not killed; the job
    # on the other node untouched.
    assert slurm.node_state("gpu001") == "drained"
    assert slurm.job_state(train) == "PENDING"
    assert slurm.job_state(other) == "RUNNING"

    for expected in ("reset", "untaint", "uncordon"):
        await bot.wait_status(run.id, RunStatus.WAITING_APPROVAL, RunStatus.FAILED)
        await bot.service.wait_idle()
        if expected == "uncordon":
            reason = slurm.node_json("gpu001")["reason"]
            assert reason == f"gpubot xid79/cordon run={run.id} incident={run.incident_id}"
        assert await bot.approve_pending(run.id) == expected, (await store.get_run(run.id)).note
    await bot.wait_status(run.id, RunStatus.SUCCEEDED, RunStatus.FAILED)
    await bot.service.wait_idle()
    final = await store.get_run(run.id)
    assert final.status is RunStatus.SUCCEEDED, final.note
    # Resumed: the node takes jobs again (the requeued job may start there at once).
    assert "DRAIN" not in slurm.node_json("gpu001")["state_flags"]
    assert slurm.node_state("gpu001") in ("idle", "mixed", "allocated")
    gpu = (await bot.gpus.agent.gpus(node="gpu001"))[3]
    assert gpu.healthy

    events = await store.events()
    finished = [e.step for e in events if e.kind == "step.finished"]
    for step in ("cordon", "drain", "reset", "verify", "diag", "uncordon"):
        assert step in finished
    started = [e.step for e in events if e.kind == "step.started"]
    assert sorted(started) == sorted(finished)
    assert await store.verify() == []
    assert "resume gpu001 in Slurm (State=RESUME" in bot.notifier.text()


async def test_xid79_on_an_admins_drain_stays_out(slurm: SlurmCluster, store: SqlStore) -> None:
    """A node an admin drained (their reason) is theirs: gpubot says so and changes nothing."""
    bot = make_bot(slurm, store)
    slurm.run("scontrol", "update", "NodeName=gpu002", "State=DRAIN", "Reason=bad PSU (ops)")
    inject_xid(bot.gpus, node="gpu002", gpu=0)
    await bot.deliver(xid_payload("gpu002", 0))
    [run] = await store.list_runs()
    await bot.wait_status(run.id, RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)
    assert "gpubot leaves it alone" in bot.notifier.text()
    assert "bad PSU (ops)" in bot.notifier.text()
    assert slurm.node_json("gpu002")["reason"] == "bad PSU (ops)"
    assert await store.verify() == []
