"""The Slurm adapter's parsing: sinfo/squeue JSON, GRES, host lists, output paths, reasons."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpubot.backends.slurm.api import clean_reason
from gpubot.backends.slurm.convert import job_pod, node_info, on_drain_of
from gpubot.backends.slurm.joblog import JobOutput, output_path
from gpubot.backends.slurm.jobs import job_id
from gpubot.backends.slurm.models import (
    SlurmJob,
    SlurmNode,
    expand_hostlist,
    gpu_count,
    gpu_type,
)
from gpubot.domain.fleet.cluster import CORDON_REASON_ANNOTATION, Taint
from gpubot.domain.fleet.slurm import reason_taints, with_taint
from gpubot.domain.runbooks.left_behind import REBOOT_LABEL, SERVICE_LABEL
from gpubot.errors import InputError


@pytest.mark.parametrize(
    ("gres", "count", "kind"),
    [
        ("gpu:h100:8(S:0-1)", 8, "h100"),
        ("gpu:4", 4, ""),
        ("gres:gpu:2", 2, ""),
        ("gpu:a100:2,gpu:t4:1,nic:1", 3, "a100"),
        ("", 0, ""),
        ("(null)", 0, ""),
    ],
)
def test_gres(gres: str, count: int, kind: str) -> None:
    assert gpu_count(gres) == count
    assert gpu_type(gres) == kind


def test_hostlists() -> None:
    assert expand_hostlist("gpu[001-003,007],login1") == (
        "gpu001",
        "gpu002",
        "gpu003",
        "gpu007",
        "login1",
    )
    assert expand_hostlist("") == ()
    assert expand_hostlist("n[1-2]-ib") == ("n1-ib", "n2-ib")
    assert len(expand_hostlist("n[0-999999999]")) <= 100_001  # bounded


def test_drained_is_not_draining() -> None:
    base = {"name": "gpu042", "gres": "gpu:h100:8", "reason": "gpubot xid79/cordon run=r"}
    draining = SlurmNode.model_validate({**base, "state": "mixed", "state_flags": ["DRAIN"]})
    drained = SlurmNode.model_validate({**base, "state": "idle", "state_flags": ["DRAIN"]})
    assert node_info(draining).draining
    assert not node_info(drained).draining
    assert node_info(drained).unschedulable
    assert node_info(drained).gpu_capacity == 8
    idle = SlurmNode.model_validate({"name": "gpu042", "state": "idle", "reason": "old"})
    assert not node_info(idle).unschedulable
    assert CORDON_REASON_ANNOTATION not in node_info(idle).annotations


def test_later_parsers_state_lists() -> None:
    node = SlurmNode.model_validate(
        {
            "name": "gpu1",
            "state": ["IDLE", "DRAIN"],
            "reason_changed_at": {"set": True, "number": 5},
        }
    )
    assert node.state == "idle"
    assert node.reason_changed_at == 5


def test_reboot_and_service_read_as_labels() -> None:
    rebooting = SlurmNode.model_validate(
        {"name": "gpu1", "state": "mixed", "state_flags": ["DRAIN", "REBOOT_REQUESTED"]}
    )
    assert node_info(rebooting).labels[REBOOT_LABEL] == "true"
    service = SlurmNode.model_validate(
        {
            "name": "gpu1",
            "state": "idle",
            "state_flags": ["DRAIN"],
            "reason": "gpubot hardware-service: XID 79 again",
        }
    )
    assert node_info(service).labels[SERVICE_LABEL] == "rma"


def test_taints_in_gpubots_reason_only() -> None:
    taint = Taint(key="gpubot.io/xid", value="79")
    reason = with_taint("gpubot xid79/cordon run=r-1", taint, present=True, limit=240)
    assert reason == "gpubot xid79/cordon run=r-1 [gpubot.io/xid=79:NoSchedule]"
    assert reason_taints(reason) == (taint,)
    assert with_taint(reason, taint, present=False, limit=240) == "gpubot xid79/cordon run=r-1"
    # Someone else's reason holds no taint of gpubot's, whatever it says.
    assert reason_taints("ops [gpubot.io/xid=79:NoSchedule]") == ()
    # The run's words are cut, never the taint.
    long = with_taint("gpubot " + "x" * 300, taint, present=True, limit=60)
    assert len(long) <= 60
    assert reason_taints(long) == (taint,)


def test_hostile_text_never_becomes_an_argument() -> None:
    assert clean_reason("gpubot a\nb\x00c\u202e d") == "gpubot a b c d"
    with pytest.raises(InputError):
        job_id("12; scancel -u root")
    with pytest.raises(InputError):
        job_id("\uff11\uff12")  # full-width digits
    assert job_id("1234") == "1234"


def _job(**fields: object) -> SlurmJob:
    return SlurmJob.model_validate({"job_id": 77, "user_name": "ada", "name": "train", **fields})


def test_output_paths() -> None:
    cwd = {"current_working_directory": "/home/ada"}
    assert output_path(_job(**cwd)) == Path("/home/ada/slurm-77.out")
    assert output_path(_job(standard_output="/scratch/%u/%x-%j.log")) == Path(
        "/scratch/ada/train-77.log"
    )
    assert output_path(_job(standard_output="/s/%5j-100%%.out")) == Path("/s/00077-100%.out")
    array = _job(array_job_id=70, array_task_id=3, **cwd)
    assert output_path(array) == Path("/home/ada/slurm-70_3.out")
    assert output_path(_job(standard_output="/s/%t.out")) is None  # per task: unknowable
    assert output_path(_job(standard_output="rel.out")) is None  # no working folder known


def test_output_roots_hold_even_through_links(tmp_path: Path) -> None:
    root = tmp_path / "scratch"
    root.mkdir()
    (root / "escape").symlink_to("/etc")
    reader = JobOutput(roots=(root,))
    assert reader.allowed(root / "ada" / "x.out") is not None
    assert reader.allowed(root / "escape" / "shadow") is None
    assert reader.allowed(root / ".." / "x.out") is None
    assert JobOutput(roots=()).allowed(root / "x.out") is None


def test_what_a_drain_does_to_a_job() -> None:
    assert on_drain_of(_job(), "requeue") == "requeue"
    assert on_drain_of(_job(requeue=False), "requeue") == "refuse (cannot be requeued)"
    assert on_drain_of(_job(requeue=False), "requeue_or_cancel") == "cancel"
    assert on_drain_of(_job(batch_flag=False), "requeue") == "refuse (cannot be requeued)"
    assert on_drain_of(_job(), "cancel") == "cancel"


@pytest.mark.parametrize(
    ("state", "status", "exit_code", "signal"),
    [
        ("COMPLETED", 0, 0, None),
        ("FAILED", 137 << 8, 137, None),  # the script itself exited 137
        ("CANCELLED", 9, 137, 9),  # SIGKILLed after KillWait: as a container runtime says it
        ("CANCELLED", 15, 143, 15),
        ("OUT_OF_MEMORY", 253, 137, 9),  # slurm.h's SIG_OOM (sacct's 0:125): the kernel's kill
    ],
)
def test_a_jobs_wait_status_as_a_containers_exit(
    state: str, status: int, exit_code: int, signal: int | None
) -> None:
    """squeue's exit_code is the batch script's wait status: a signal in the low bits reads
    as 128 + the signal, not as an exit status of 9 (which no SIGKILL rule knows)."""
    job = SlurmJob.model_validate(
        {"job_id": 7, "job_state": state, "exit_code": status, "nodes": "gpu001"}
    )
    last = job_pod(job, "gpu001", now=datetime.now(UTC)).last_terminated
    assert last is not None
    assert (last.exit_code, last.signal) == (exit_code, signal)
