"""OOM triage of a real Slurm job from its id: its state and the tail of its output file."""

from __future__ import annotations

import pytest
from slurm_cluster import SlurmCluster
from slurm_engine import CLUSTER, make_bot
from waiting import eventually

from gpubot.backends.slurm import SlurmCommands, SlurmKubeApi
from gpubot.backends.slurm.joblog import JobOutput
from gpubot.backends.store import SqlStore
from gpubot.domain.runbooks.runs import RunStatus
from gpubot.errors import NotFoundError

OOM_LOG = (
    "epoch 3 step 1200 loss 1.93\n"
    "slurmstepd: error: Detected 1 oom_kill event in StepId=$SLURM_JOB_ID.batch. "
    "Some of the step tasks have been OOM Killed.\n"
)


async def _ended(slurm: SlurmCluster, job: str) -> None:
    await eventually(
        lambda: slurm.job_state(job) not in ("PENDING", "RUNNING", "COMPLETING", "CONFIGURING"),
        f"job {job} to end",
    )


async def test_oom_triage_from_a_job_id(slurm: SlurmCluster, store: SqlStore) -> None:
    out = slurm.root / "out"
    out.mkdir(exist_ok=True)
    script = f"printf '{OOM_LOG}' | sed \"s/\\$SLURM_JOB_ID/$SLURM_JOB_ID/\"; exit 137"
    job = slurm.sbatch(
        "-w",
        "gpu001",
        "--gres=gpu:1",
        "-J",
        "train-llm",
        f"--output={out}/%x-%j.out",
        "--wrap",
        script,
    )
    await _ended(slurm, job)
    bot = make_bot(slurm, store, "slurm-oom-triage")
    _, run = await bot.service.start_command_run(
        runbook="slurm-oom-triage", args={"job": job}, requested_by="U1", cluster=CLUSTER
    )
    assert run is not None
    await bot.wait_status(run.id, RunStatus.SUCCEEDED, RunStatus.FAILED)
    [step] = await store.steps(run.id)
    assert step.output["pod"] == f"slurm/{job}"
    assert step.output["node"] == "gpu001"
    assert step.output["last_state"]["reason"] == "Error"  # FAILED, exit 137
    assert step.output["class"] == "host_oom_killed", step.output
    assert any("oom_kill event" in line for line in step.output["evidence"])


async def test_output_outside_the_roots_is_not_read(slurm: SlurmCluster) -> None:
    """The --output path is the job owner's choice: a file outside output_roots stays unread."""
    job = slurm.sbatch("-w", "gpu002", f"--output={slurm.root}/secret-%j.out", "--wrap", "echo s")
    await _ended(slurm, job)
    api = SlurmKubeApi(
        SlurmCommands(conf=slurm.conf), job_output=JobOutput(roots=(slurm.root / "out",))
    )
    with pytest.raises(NotFoundError, match=r"not under slurm\.output_roots"):
        await api.pod_logs(namespace="slurm", name=job)
    pod = await api.get_pod(namespace="slurm", name=job)
    assert pod.last_terminated is not None
    assert pod.last_terminated.reason == "Completed"
