"""The Slurm adapter against real slurmctld and slurmd: drain, requeue, DRAINED, resume."""

from __future__ import annotations

import asyncio

import pytest
from slurm_cluster import SlurmCluster
from waiting import eventually

from gpubot.backends.slurm import SlurmCommands, SlurmKubeApi
from gpubot.domain.fleet.cluster import CORDON_REASON_ANNOTATION, Taint
from gpubot.domain.runbooks.left_behind import REBOOT_LABEL
from gpubot.errors import InputError, NotFoundError, PermanentStepError

REASON = "gpubot xid79/cordon run=r-1 incident=i-1"


async def running(api: SlurmKubeApi, node: str, count: int) -> None:
    async def check() -> bool:
        return len(await api.list_pods(node=node)) == count

    await eventually(check, f"{count} job(s) running on {node}")


async def test_nodes_read_as_gpu_nodes(api: SlurmKubeApi, slurm: SlurmCluster) -> None:
    nodes = {n.name: n for n in await api.list_nodes()}
    assert sorted(nodes) == ["gpu001", "gpu002"]
    assert nodes["gpu001"].gpu_capacity == 4
    assert nodes["gpu001"].gpu_product == "h100"
    assert not nodes["gpu001"].unschedulable
    fleet = await api.gpu_fleet()
    assert fleet.gpu_nodes == {"gpu001", "gpu002"}
    assert not fleet.cordoned
    assert await api.node_internal_ips() == {"gpu001": "127.0.0.1", "gpu002": "127.0.0.1"}


async def test_drain_requeue_then_drained_and_resume(
    api: SlurmKubeApi, slurm: SlurmCluster
) -> None:
    first = slurm.sbatch("-w", "gpu001", "--gres=gpu:2", "-A", "physics", "--wrap", "sleep 600")
    second = slurm.sbatch("-w", "gpu001", "--gres=gpu:1", "--wrap", "sleep 600")
    await running(api, "gpu001", 2)
    jobs = {p.name: p for p in await api.list_pods(node="gpu001")}
    assert set(jobs) == {first, second}
    assert jobs[first].gpu_request == 2
    assert jobs[second].gpu_request == 1
    assert jobs[first].labels["slurm.schedmd.com/account"] == "physics"
    assert jobs[first].labels["slurm.schedmd.com/user"] == "root"
    assert jobs[first].labels["slurm.schedmd.com/partition"] == "gpu"

    await api.set_unschedulable(node="gpu001", value=True, actor="system", reason=REASON)
    node = await api.get_node(node="gpu001")
    assert node.unschedulable
    assert node.draining
    assert node.annotations[CORDON_REASON_ANNOTATION] == REASON
    assert slurm.node_state("gpu001") == "draining"
    assert slurm.job_state(first) == "RUNNING"
    # Nothing new starts there.
    third = slurm.sbatch("-w", "gpu001", "--wrap", "sleep 600")
    await asyncio.sleep(2)
    assert slurm.job_state(third) == "PENDING"

    for job in (first, second):
        await api.evict(namespace="slurm", name=job)

    async def drained() -> bool:
        return not (await api.get_node(node="gpu001")).draining

    await eventually(drained, "gpu001 DRAINED")
    assert slurm.node_state("gpu001") == "drained"
    assert await api.list_pods(node="gpu001") == []
    # Requeued: back in the queue, not cancelled.
    assert slurm.job_state(first) == "PENDING"
    assert slurm.job_state(second) == "PENDING"

    await api.set_unschedulable(node="gpu001", value=False, actor="U1", reason=REASON)
    assert not (await api.get_node(node="gpu001")).unschedulable
    # Slurm marks a resumed node not responding (idle*) until its next ping.
    assert slurm.node_state("gpu001") in ("idle", "mixed", "allocated")


async def test_foreign_drain_is_theirs(api: SlurmKubeApi, slurm: SlurmCluster) -> None:
    slurm.run("scontrol", "update", "NodeName=gpu002", "State=DRAIN", "Reason=fan 3 failing")
    node = await api.get_node(node="gpu002")
    assert node.unschedulable
    assert node.annotations[CORDON_REASON_ANNOTATION] == "fan 3 failing"
    with pytest.raises(PermanentStepError, match="fan 3 failing"):
        await api.set_unschedulable(node="gpu002", value=False, actor="U1", reason=REASON)
    with pytest.raises(PermanentStepError, match="not by gpubot"):
        await api.set_unschedulable(node="gpu002", value=True, actor="system", reason=REASON)
    assert slurm.node_state("gpu002") == "drained"
    assert (await api.get_node(node="gpu002")).annotations[
        CORDON_REASON_ANNOTATION
    ] == "fan 3 failing"


async def test_reason_taken_over_after_gpubot_drain(api: SlurmKubeApi, slurm: SlurmCluster) -> None:
    """gpubot drained it, then a health check re-drained it with its own reason: no resume."""
    await api.set_unschedulable(node="gpu001", value=True, actor="system", reason=REASON)
    slurm.run("scontrol", "update", "NodeName=gpu001", "State=DRAIN", "Reason=nhc: ECC errors")
    with pytest.raises(PermanentStepError, match="nhc: ECC errors"):
        await api.set_unschedulable(node="gpu001", value=False, actor="U1", reason=REASON)
    assert slurm.node_state("gpu001") == "drained"


async def test_job_that_cannot_be_requeued(slurm: SlurmCluster) -> None:
    commands = SlurmCommands(conf=slurm.conf, timeout_seconds=20)
    strict = SlurmKubeApi(commands)
    job = slurm.sbatch("-w", "gpu002", "--no-requeue", "--wrap", "sleep 600")
    await running(strict, "gpu002", 1)
    [pod] = await strict.list_pods(node="gpu002")
    assert pod.annotations["gpubot.io/on-drain"] == "refuse (cannot be requeued)"
    with pytest.raises(PermanentStepError, match=f"job {job} cannot be requeued"):
        await strict.evict(namespace="slurm", name=job)
    assert slurm.job_state(job) == "RUNNING"
    lenient = SlurmKubeApi(commands, drain_jobs="requeue_or_cancel")
    await lenient.evict(namespace="slurm", name=job)
    await running(lenient, "gpu002", 0)
    assert slurm.job_state(job) in ("", "CANCELLED", "COMPLETING")


async def test_reboot_asap_through_slurm(api: SlurmKubeApi, slurm: SlurmCluster) -> None:
    slurm.sbatch("-w", "gpu002", "--wrap", "sleep 600")  # the reboot waits for it
    await running(api, "gpu002", 1)
    await api.set_node_metadata(
        node="gpu002",
        labels={REBOOT_LABEL: "true"},
        annotations={"gpubot.io/reboot-requested": "U1: gpubot xid79/reboot run=r-1"},
    )
    node = await api.get_node(node="gpu002")
    assert node.labels[REBOOT_LABEL] == "true"
    assert node.unschedulable  # ASAP: drained until it reboots
    assert node.annotations[CORDON_REASON_ANNOTATION].startswith("gpubot reboot: U1:")
    await api.set_node_metadata(node="gpu002", labels={REBOOT_LABEL: None})
    assert REBOOT_LABEL not in (await api.get_node(node="gpu002")).labels


async def test_hostile_names_never_reach_slurm(api: SlurmKubeApi) -> None:
    with pytest.raises(InputError):
        await api.get_node(node="gpu001; scontrol shutdown")
    with pytest.raises(InputError):
        await api.evict(namespace="slurm", name="1 --signal=KILL")
    with pytest.raises(NotFoundError):
        await api.get_node(node="gpu999")
    with pytest.raises(NotFoundError):
        await api.get_pod(namespace="slurm", name="999999")


async def test_taints_live_in_gpubots_reason(api: SlurmKubeApi, slurm: SlurmCluster) -> None:
    taint = Taint(key="gpubot.io/xid", value="79")
    with pytest.raises(PermanentStepError, match="has not drained this node"):
        await api.set_taint(node="gpu001", taint=taint, present=True)
    await api.set_unschedulable(node="gpu001", value=True, actor="system", reason=REASON)
    await api.set_taint(node="gpu001", taint=taint, present=True)
    node = await api.get_node(node="gpu001")
    assert node.taints == (taint,)
    assert slurm.node_json("gpu001")["reason"] == f"{REASON} [gpubot.io/xid=79:NoSchedule]"
    await api.set_taint(node="gpu001", taint=taint, present=False)
    assert (await api.get_node(node="gpu001")).taints == ()
    assert slurm.node_json("gpu001")["reason"] == REASON
