"""The triage.oom step on the simulated cluster: the pod's last state and the alert's own reason
decide when the logs say nothing; the runbook passes the alert's reason label."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpubot.actions.base import ActionContext
from gpubot.actions.triage import OomParams, gather_oom, oom_report
from gpubot.backends.simulated import SimulatedCluster, SimulatedKube
from gpubot.domain.runbooks.loader import parse_runbook
from gpubot.domain.runbooks.variables import resolve_params
from gpubot.engine.clock import FakeClock
from gpubot.errors import GpubotError

NS, POD = "ml-train", "llama3-70b-pretrain-0"
RUNBOOK = Path(__file__).resolve().parents[3] / "runbooks" / "oom-triage.yaml"


class LogsGone(SimulatedKube):
    """The previous container's logs cannot be read (rotated away, or the pod was replaced)."""

    async def pod_logs(self, **kwargs: Any) -> str:
        raise GpubotError("previous terminated container not found")


def _ctx(cluster: SimulatedCluster) -> ActionContext:
    return ActionContext(
        cluster=cluster.ports(),
        clock=FakeClock(),
        actor="system",
        reason="test",
    )


def _last_state(cluster: SimulatedCluster, **last: Any) -> None:
    with cluster.mutation() as state:
        pod = state.pod(NS, POD)
        pod.last_state = {"container": pod.container, **last}
        pod.restart_count += 1


async def test_oomkilled_last_state_with_empty_logs_is_a_memory_kill() -> None:
    cluster = SimulatedCluster.default()
    _last_state(cluster, reason="OOMKilled", exitCode=137, message="")
    out = await gather_oom(_ctx(cluster), OomParams(namespace=NS, pod=POD))
    assert (out["class"], out["family"], out["confidence"]) == (
        "host_oom_killed",
        "kubelet_oomkilled",
        "high",
    )
    assert "last state reason: OOMKilled" in out["evidence"]


async def test_the_alerts_reason_decides_when_the_pod_and_its_logs_say_nothing() -> None:
    cluster = SimulatedCluster.default()
    cluster.kube = LogsGone(cluster)
    out = await gather_oom(_ctx(cluster), OomParams(namespace=NS, pod=POD, reason="OOMKilled"))
    assert out["class"] == "host_oom_killed"
    assert "alert reason: OOMKilled" in out["evidence"]
    assert "Class: host_oom_killed* (kubelet_oomkilled, high confidence)" in oom_report(out)


async def test_error_137_without_the_alerts_reason_is_killed_cause_unknown() -> None:
    cluster = SimulatedCluster.default()
    _last_state(cluster, reason="Error", exitCode=137, message="")
    out = await gather_oom(_ctx(cluster), OomParams(namespace=NS, pod=POD))
    assert out["class"] == "killed_unknown"
    assert any("kubectl describe pod" in a for a in out["advice"])


async def test_the_nodes_gpu_model_sizes_a_request_the_message_leaves_unsized() -> None:
    cluster = SimulatedCluster.default()  # every node: NVIDIA H100 80GB HBM3
    _last_state(
        cluster,
        reason="Error",
        exitCode=1,
        message="torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 900.00 GiB",
    )
    out = await gather_oom(_ctx(cluster), OomParams(namespace=NS, pod=POD))
    assert (out["class"], out["family"]) == ("not_oom", "absurd_request")


def test_a_reason_label_that_is_not_a_plain_word_is_ignored() -> None:
    assert OomParams(namespace=NS, pod=POD, reason="OOMKilled").reason == "OOMKilled"
    assert OomParams(namespace=NS, pod=POD, reason="<!here> OOMKilled").reason == ""


def test_the_runbook_takes_the_reason_from_the_alert_and_does_without_it() -> None:
    runbook = parse_runbook(RUNBOOK.read_text(), path=RUNBOOK).runbook
    labels = {"namespace": NS, "pod": POD, "reason": "OOMKilled"}
    params = resolve_params(runbook, base={"alert": {"labels": labels}}, given={})
    assert params["reason"] == "OOMKilled"
    del labels["reason"]
    params = resolve_params(runbook, base={"alert": {"labels": labels}}, given={})
    assert params["reason"] is None


class SlurmJobTimedOut(SimulatedKube):
    """The pod is a Slurm job that Slurm's accounting recorded TIMEOUT."""

    async def get_pod(self, *, namespace: str, name: str) -> Any:
        from dataclasses import replace

        from gpubot.domain.fleet.slurm import JOB_KIND, STATE_ANNOTATION

        pod = await super().get_pod(namespace=namespace, name=name)
        return replace(pod, owner_kind=JOB_KIND, annotations={STATE_ANNOTATION: "TIMEOUT"})


async def test_a_slurm_jobs_accounting_state_gives_its_sigkill_a_cause() -> None:
    cluster = SimulatedCluster.default()
    _last_state(cluster, reason="Error", exitCode=137, message="")
    cluster.kube = SlurmJobTimedOut(cluster)
    out = await gather_oom(_ctx(cluster), OomParams(namespace=NS, pod=POD))
    assert (out["class"], out["family"]) == ("not_oom", "slurm_job_ended_for_cause")
    assert "job_accounting" in out["sources_agreed"]
    assert out["advice"][0].startswith("Slurm recorded the job TIMEOUT")


class SlurmJobOutOfMemory(SimulatedKube):
    """The pod is a Slurm job recorded OUT_OF_MEMORY, shaped as SlurmKubeApi shapes one: the
    state is also its last state's reason and message and a warning event; its output file
    says only "Killed"."""

    async def get_pod(self, *, namespace: str, name: str) -> Any:
        from dataclasses import replace

        from gpubot.domain.fleet.cluster import ContainerTermination
        from gpubot.domain.fleet.slurm import JOB_KIND, STATE_ANNOTATION

        pod = await super().get_pod(namespace=namespace, name=name)
        last = ContainerTermination(
            container=pod.container,
            reason="OOMKilled",
            exit_code=137,
            signal=9,
            message="Slurm job 7 ended OUT_OF_MEMORY",
        )
        annotations = {STATE_ANNOTATION: "OUT_OF_MEMORY"}
        return replace(pod, owner_kind=JOB_KIND, annotations=annotations, last_terminated=last)

    async def pod_logs(self, **kwargs: Any) -> str:
        return "epoch 1 step 10 loss 2.31\nKilled\n"

    async def pod_events(self, *, namespace: str, name: str) -> list[Any]:
        from gpubot.domain.fleet.cluster import PodEvent

        message = "Slurm job 7 state OUT_OF_MEMORY (OutOfMemory)"
        return [PodEvent(type="Warning", reason="OUT_OF_MEMORY", message=message)]


async def test_a_slurm_jobs_state_is_judged_once_as_its_accounting_not_as_its_log() -> None:
    """The reason, message and event a Slurm job carries are its accounting state: the log
    source is its output file ("Killed": cause unknown), and job_accounting decides. They
    used to be read as the log too, which then "agreed" from the state's own words."""
    cluster = SimulatedCluster.default()
    cluster.kube = SlurmJobOutOfMemory(cluster)
    out = await gather_oom(_ctx(cluster), OomParams(namespace=NS, pod=POD))
    assert (out["class"], out["family"], out["confidence"]) == (
        "host_oom_killed",
        "slurm_out_of_memory",
        "high",
    )
    [log] = [s for s in out["sources"] if s["source"] == "log"]
    assert log["says"].startswith("killed_unknown")
    [accounting] = [s for s in out["sources"] if s["source"] == "job_accounting"]
    assert accounting["status"] == "decides"
