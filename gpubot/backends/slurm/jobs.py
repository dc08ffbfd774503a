"""Slurm jobs as the pod ports: list, read, log and take them off a node (requeue or cancel)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Literal

from pydantic import ValidationError

from gpubot.backends.slurm.commands import SlurmCommands
from gpubot.backends.slurm.convert import job_pod, on_drain_of
from gpubot.backends.slurm.joblog import JobOutput
from gpubot.backends.slurm.models import SlurmJob, SlurmJobs
from gpubot.domain.fleet.cluster import PodDisruptionBudget, PodEvent, PodInfo
from gpubot.domain.fleet.slurm import JOB_NAMESPACE
from gpubot.domain.fleet.workloads import Workload
from gpubot.errors import GpubotError, InputError, NotFoundError, PermanentStepError

DrainJobs = Literal["requeue", "cancel", "requeue_or_cancel"]
_JOB_ID = re.compile(r"[0-9]{1,10}", re.ASCII)
_NOT_REQUEUEABLE = re.compile(r"presently disabled|not requeue", re.IGNORECASE)


def job_id(name: str) -> str:
    """A pod name that must be a Slurm job id (digits only; never passed on otherwise)."""
    if not _JOB_ID.fullmatch(name):
        raise InputError(f"{name!r} is not a Slurm job id")
    return name


class SlurmJobPods:
    """PodReads and Evictions over squeue, sacct, scontrol requeue and scancel; the part of
    SlurmKubeApi that is about jobs."""

    cmd: SlurmCommands
    drain_jobs: DrainJobs
    job_output: JobOutput
    dry_run: bool

    async def _jobs(self) -> list[SlurmJob]:
        data = await self.cmd.run_json("squeue")
        try:
            return list(SlurmJobs.model_validate(data).jobs)
        except ValidationError as exc:
            raise PermanentStepError(
                f"squeue --json: unexpected shape ({exc.error_count()} errors)"
            ) from exc

    # -- jobs as pods --

    async def list_pods(
        self, *, node: str | None = None, namespace: str | None = None, cached: bool = False
    ) -> list[PodInfo]:
        if namespace not in (None, JOB_NAMESPACE):
            return []
        now = datetime.now(UTC)
        pods = []
        for job in await self._jobs():
            if job.job_state not in (
                "RUNNING",
                "COMPLETING",
                "SUSPENDED",
                "CONFIGURING",
                "STOPPED",
            ):
                continue
            for name in job.node_names:
                if node is None or name == node:
                    on_drain = on_drain_of(job, self.drain_jobs)
                    pods.append(job_pod(job, name, now=now, on_drain=on_drain))
        return pods

    async def gpu_pods(self, *, node: str) -> list[PodInfo]:
        return [p for p in await self.list_pods(node=node) if p.gpu_request > 0]

    async def list_pdbs(self, *, namespace: str | None = None) -> list[PodDisruptionBudget]:
        return []

    async def _job(self, name: str) -> SlurmJob:
        wanted = int(job_id(name))
        for job in await self._jobs():
            if job.job_id == wanted:
                return job
        return await self._accounted(wanted)

    async def _accounted(self, wanted: int) -> SlurmJob:
        """A job slurmctld has forgotten (past MinJobAge), from accounting (sacct)."""
        try:
            data = await self.cmd.run_json("sacct", "-j", str(wanted))
        except PermanentStepError as exc:
            raise NotFoundError(f"Slurm job {wanted}: not in the queue, and sacct: {exc}") from exc
        for raw in data.get("jobs") or []:
            if isinstance(raw, dict) and raw.get("job_id") == wanted:
                return _from_sacct(raw)
        raise NotFoundError(f"Slurm has no job {wanted}")

    async def get_pod(self, *, namespace: str, name: str) -> PodInfo:
        if namespace != JOB_NAMESPACE:
            raise NotFoundError(
                f"on Slurm, jobs are namespace {JOB_NAMESPACE!r}, not {namespace!r}"
            )
        job = await self._job(name)
        nodes = job.node_names
        return job_pod(job, nodes[0] if nodes else "", now=datetime.now(UTC))

    async def pod_logs(
        self,
        *,
        namespace: str,
        name: str,
        container: str | None = None,
        previous: bool = False,
        tail_lines: int = 100,
    ) -> str:
        """The tail of the job's output file (--output), where it lies under slurm.output_roots."""
        job = await self._job(name)
        return await self.job_output.tail(job, lines=tail_lines)

    async def pod_events(self, *, namespace: str, name: str) -> list[PodEvent]:
        job = await self._job(name)
        if job.job_state in ("OUT_OF_MEMORY", "FAILED", "NODE_FAIL", "TIMEOUT", "CANCELLED"):
            return [
                PodEvent(
                    type="Warning",
                    reason=job.job_state,
                    message=f"Slurm job {job.job_ref} state {job.job_state}"
                    + (f" ({job.state_reason})" if job.state_reason not in ("", "None") else ""),
                )
            ]
        return []

    # -- evictions: requeue or cancel --

    async def evict(self, *, namespace: str, name: str, grace_seconds: int | None = None) -> None:
        """Requeue the job (`scontrol requeue`: it goes back to pending, and runs elsewhere,
        not on this drained node), or cancel it, as `slurm.drain_jobs` says."""
        job = job_id(name)
        if self.drain_jobs == "cancel":
            await self.delete_pod(namespace=namespace, name=job, grace_seconds=grace_seconds)
            return
        if self.dry_run:
            return
        try:
            await self.cmd.run("scontrol", "requeue", job)
        except PermanentStepError as exc:
            if not _NOT_REQUEUEABLE.search(str(exc)):
                raise
            if self.drain_jobs == "requeue_or_cancel":
                await self.delete_pod(namespace=namespace, name=job, grace_seconds=grace_seconds)
                return
            raise PermanentStepError(
                f"Slurm job {job} cannot be requeued (submitted --no-requeue, or not a batch "
                "job): cancel it (scancel) or set slurm.drain_jobs: requeue_or_cancel"
            ) from exc
        except NotFoundError:
            return  # it ended meanwhile: nothing to take off the node

    async def delete_pod(self, *, namespace: str, name: str, grace_seconds: int | None) -> None:
        job = job_id(name)
        if self.dry_run:
            return
        try:
            await self.cmd.run("scancel", job)
        except NotFoundError:
            return

    @property
    def workloads(self) -> SlurmWorkloads:
        return SlurmWorkloads()


class SlurmWorkloads:
    """Scaling a workload is Kubernetes' idea; on Slurm every call says so in one line."""

    async def get_workload_owner(self, *, namespace: str, pod: str) -> Workload:
        raise PermanentStepError("idle-GPU reclamation scales Kubernetes workloads; not on Slurm")

    async def get_workload(self, *, namespace: str, kind: str, name: str) -> Workload:
        raise PermanentStepError("idle-GPU reclamation scales Kubernetes workloads; not on Slurm")

    async def scale_workload(
        self,
        *,
        namespace: str,
        kind: str,
        name: str,
        replicas: int,
        annotations: Mapping[str, str | None] | None = None,
        dry_run: bool = False,
    ) -> int:
        raise PermanentStepError("idle-GPU reclamation scales Kubernetes workloads; not on Slurm")


def _from_sacct(raw: Mapping[str, object]) -> SlurmJob:
    """sacct --json's job as a queue job (the fields triage reads)."""
    state = raw.get("state")
    current = state.get("current", "") if isinstance(state, dict) else ""
    exit_code = raw.get("exit_code")
    code = 0
    if isinstance(exit_code, dict):
        rc = exit_code.get("return_code", 0)
        code = rc if isinstance(rc, int) else 0
    try:
        return SlurmJob.model_validate(
            {
                "job_id": raw.get("job_id"),
                "job_state": current,
                "name": raw.get("name", ""),
                "user_name": raw.get("user", ""),
                "account": raw.get("account", ""),
                "partition": raw.get("partition", ""),
                "nodes": raw.get("nodes", ""),
                "exit_code": code,
                "current_working_directory": raw.get("working_directory", ""),
                "standard_output": raw.get("stdout", "") or "",
            }
        )
    except ValidationError as exc:
        raise GpubotError(
            f"sacct --json: unexpected job shape ({exc.error_count()} errors)"
        ) from exc
