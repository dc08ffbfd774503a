"""gpu-reset, release-node and node-handoff on Slurm nodes, against real Slurm."""

from __future__ import annotations

from slurm_cluster import SlurmCluster
from slurm_engine import CLUSTER, SlurmBot, make_bot
from waiting import eventually

from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.backends.store import SqlStore
from gpubot.domain.runbooks.runs import RunStatus

REASON = "gpubot xid79/cordon run=r-0 incident=i-0 [gpubot.io/xid=79:NoSchedule]"


async def _running(slurm: SlurmCluster, job: str) -> None:
    await eventually(lambda: slurm.job_state(job) == "RUNNING", f"job {job} to run")


async def _run(bot: SlurmBot, runbook: str, **args: str) -> str:
    _, run = await bot.service.start_command_run(
        runbook=runbook, args=args, requested_by="U2", cluster=CLUSTER
    )
    assert run is not None
    return run.id


async def _settle(bot: SlurmBot, run_id: str) -> RunStatus:
    await bot.wait_status(
        run_id,
        RunStatus.WAITING_APPROVAL,
        RunStatus.SUCCEEDED,
        RunStatus.FAILED,
        RunStatus.CANCELLED,
        RunStatus.NEEDS_HUMAN,
    )
    await bot.service.wait_idle()
    return (await bot.store.get_run(run_id)).status


async def test_gpu_reset_waits_for_drained(slurm: SlurmCluster, store: SqlStore) -> None:
    """A node still DRAINING (a job on it) is not reset, though it reads as quarantined."""
    bot = make_bot(slurm, store, "gpu-reset")
    job = slurm.sbatch("-w", "gpu001", "--gres=gpu:1", "--wrap", "sleep 600")
    await _running(slurm, job)
    slurm.run("scontrol", "update", "NodeName=gpu001", "State=DRAIN", f"Reason={REASON}")
    inject_xid(bot.gpus, node="gpu001", gpu=2)
    run_id = await _run(bot, "gpu-reset", node="gpu001", gpu="2")
    assert await _settle(bot, run_id) is RunStatus.WAITING_APPROVAL
    assert "refused while the scheduler reports the node draining" in bot.notifier.text()
    assert await bot.approve_pending(run_id) == "reset"
    status = await _settle(bot, run_id)
    assert status is RunStatus.FAILED
    assert "DRAINING, not DRAINED" in (await store.get_run(run_id)).note + bot.notifier.text()
    assert not (await bot.gpus.agent.gpus(node="gpu001"))[2].healthy  # never reset
    assert await store.verify() == []


async def test_release_node_resumes_gpubots_drain(slurm: SlurmCluster, store: SqlStore) -> None:
    bot = make_bot(slurm, store, "release-node")
    slurm.run("scontrol", "update", "NodeName=gpu002", "State=DRAIN", f"Reason={REASON}")
    run_id = await _run(bot, "release-node", node="gpu002")
    for expected in ("untaint", "uncordon"):
        assert await _settle(bot, run_id) is RunStatus.WAITING_APPROVAL
        assert await bot.approve_pending(run_id) == expected
    assert await _settle(bot, run_id) is RunStatus.SUCCEEDED
    assert "DRAIN" not in slurm.node_json("gpu002")["state_flags"]
    assert await store.verify() == []


async def test_release_node_leaves_an_admins_drain(slurm: SlurmCluster, store: SqlStore) -> None:
    """The admin's reason is theirs: the resume is refused naming it, the node stays drained."""
    bot = make_bot(slurm, store, "release-node")
    slurm.run("scontrol", "update", "NodeName=gpu002", "State=DRAIN", "Reason=DIMM B2 (ops-142)")
    run_id = await _run(bot, "release-node", node="gpu002")
    for _ in range(2):
        if await _settle(bot, run_id) is RunStatus.WAITING_APPROVAL:
            await bot.approve_pending(run_id)
    assert await _settle(bot, run_id) is RunStatus.FAILED
    assert "DIMM B2 (ops-142)" in bot.notifier.text()
    assert slurm.node_json("gpu002")["reason"] == "DIMM B2 (ops-142)"
    assert slurm.node_state("gpu002") == "drained"


async def test_node_handoff_reboots_through_slurm(slurm: SlurmCluster, store: SqlStore) -> None:
    bot = make_bot(slurm, store, "node-handoff")
    job = slurm.sbatch("-w", "gpu001", "--wrap", "sleep 600")  # the reboot waits for it
    await _running(slurm, job)
    run_id = await _run(bot, "node-handoff", node="gpu001", to="reboot")
    assert await _settle(bot, run_id) is RunStatus.WAITING_APPROVAL
    assert await bot.approve_pending(run_id) == "reboot"
    assert await _settle(bot, run_id) is RunStatus.SUCCEEDED
    node = slurm.node_json("gpu001")
    assert "REBOOT_REQUESTED" in node["state_flags"]
    assert node["next_state_after_reboot"] == "down"
    assert str(node["reason"]).startswith("gpubot reboot: U1: gpubot node-handoff/reboot run=")
    slurm.run("scontrol", "cancel_reboot", "gpu001")


async def test_thermal_plans_on_a_slurm_node(slurm: SlurmCluster, store: SqlStore) -> None:
    """thermal touches only the node's GPUs (agent) and Prometheus: it plans as on Kubernetes."""
    bot = make_bot(slurm, store, "thermal")
    plan = await bot.service.plan(
        runbook="thermal", args={"node": "gpu001", "gpu": "0"}, cluster=CLUSTER
    )
    assert plan.problems == ()
    assert [s.id for s in plan.steps][:2] == ["check", "cap"]
    assert all(not s.problem for s in plan.steps)
