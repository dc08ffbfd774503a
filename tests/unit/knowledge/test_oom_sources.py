"""The OOM verdict from every source: the kernel log decides where the log cannot tell, and
each other source agrees, disagrees, says nothing or is named as missing."""

from __future__ import annotations

import time

from gpubot.knowledge.oom.sources import Sources, combine, kernel_oom_lines
from gpubot.knowledge.oom.triage import classify

UID = "e412d02d-3c7c-5536-9858-f8c041332efb"
REPORT = (
    "2026-11-28T05:00:01+00:00 n1 kernel: oom-kill:constraint=CONSTRAINT_MEMCG,"
    "task_memcg=/kubepods.slice/kubepods-burstable-pod{uid}.slice/cri-containerd-ab.scope,"
    "task=python,pid=4242,uid=0\n"
    "2026-11-28T05:00:01+00:00 n1 kernel: Memory cgroup out of memory: Killed process 4242 "
    "(python) total-vm:9kB, anon-rss:8kB"
)
OURS = REPORT.format(uid=UID.replace("-", "_"))
THEIRS = REPORT.format(uid="0" * 8 + "_1111_2222_3333_" + "4" * 12)


def test_the_kernel_report_naming_the_pods_cgroup_is_read_with_its_victim_line() -> None:
    lines = kernel_oom_lines(OURS, pod_uid=UID)
    assert len(lines) == 2
    assert "Killed process 4242" in lines[1]
    assert kernel_oom_lines(THEIRS, pod_uid=UID) == ()
    assert kernel_oom_lines(OURS, pod_uid="") == (), "no UID, nothing can be said to be ours"


def test_the_kernel_log_decides_a_sigkill_the_log_could_not_explain() -> None:
    log = classify("Signal 9 (SIGKILL) received by PID 4242")
    assert log.cls == "killed_unknown"
    out = combine(log, Sources(kernel_log=OURS, pod_uid=UID))
    assert (out.cls, out.family, out.confidence) == (
        "host_oom_killed",
        "kernel_oom_killer_for_pod",
        "high",
    )
    assert "Killed process 4242" in out.evidence[1]
    assert out.agreed == ("log", "kernel_log")
    assert set(out.missing) == {"memory_working_set", "gpu_memory", "shm_size"}


def test_cannot_tell_is_decided_too_but_a_cuda_oom_is_not_overruled() -> None:
    doubt = classify("worker 3: allocation failed")
    assert combine(doubt, Sources(kernel_log=OURS, pod_uid=UID)).cls == "host_oom_killed"
    cuda = classify("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    out = combine(cuda, Sources(kernel_log=OURS, pod_uid=UID))
    assert out.cls == "cuda_oom"
    assert {f.source: f.status for f in out.findings}["kernel_log"] == "disagrees"


def test_each_other_source_agrees_disagrees_or_says_nothing() -> None:
    host = classify("Memory cgroup out of memory: Killed process 7 (python)")
    at_limit = Sources(kernel_log="", working_set_bytes=99.0, memory_limit_bytes=100, shm_bytes=1)
    status = {f.source: f.status for f in combine(host, at_limit).findings}
    assert status == {
        "log": "agrees",
        "kernel_log": "silent",
        "memory_working_set": "agrees",
        "gpu_memory": "missing",
        "shm_size": "silent",
    }
    cuda = classify("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    full = Sources(
        gpu_used_mib=80000, gpu_total_mib=81920, working_set_bytes=99.0, memory_limit_bytes=100
    )
    status = {f.source: f.status for f in combine(cuda, full).findings}
    assert status["gpu_memory"] == "agrees"
    assert status["memory_working_set"] == "disagrees"
    shm = classify(
        "ERROR: Unexpected bus error encountered in worker. This might be caused by "
        "insufficient shared memory (shm)."
    )
    small = Sources(shm_bytes=64 << 20)
    assert {f.source: f.status for f in combine(shm, small).findings}["shm_size"] == "agrees"


def test_the_json_names_sources_agreed_and_missing() -> None:
    out = combine(classify("Killed"), Sources()).as_json()
    assert out["sources_agreed"] == ["log"]
    assert "kernel_log" in out["sources_missing"]
    assert all(set(s) == {"source", "status", "says"} for s in out["sources"])


def test_a_hostile_kernel_log_is_read_in_bounded_time() -> None:
    # A megabyte of OOM-looking lines naming other cgroups: every line is a candidate.
    line = (
        "kernel: Killed process 1 task_memcg=/kubepods/pod"
        + "0" * 8
        + "-1111-2222-3333-"
        + "4" * 12
    )
    hostile = "\n".join([line] * (1_000_000 // len(line)))
    start = time.perf_counter()
    assert kernel_oom_lines(hostile, pod_uid=UID) == ()
    assert time.perf_counter() - start < 2  # generous on a loaded 2-core machine


def test_slurm_accounting_gives_a_bare_sigkill_its_cause() -> None:
    """A SIGKILL with no cause in the log, on a job Slurm recorded TIMEOUT: the time limit
    ended it, not memory."""
    out = combine(classify("Killed"), Sources(on_slurm=True, job_state="TIMEOUT"))
    assert (out.cls, out.family) == ("not_oom", "slurm_job_ended_for_cause")
    assert out.evidence[0] == "Slurm recorded the job TIMEOUT: it was ended by its time limit"
    assert {f.source: f.status for f in out.findings}["job_accounting"] == "decides"


def test_slurm_out_of_memory_decides_what_the_log_could_not_tell() -> None:
    out = combine(classify("Killed"), Sources(on_slurm=True, job_state="OUT_OF_MEMORY"))
    assert (out.cls, out.family, out.confidence) == (
        "host_oom_killed",
        "slurm_out_of_memory",
        "high",
    )
    host = combine(
        classify("Memory cgroup out of memory: Killed process 7 (python)"),
        Sources(on_slurm=True, job_state="OUT_OF_MEMORY"),
    )
    assert {f.source: f.status for f in host.findings}["job_accounting"] == "agrees"


def test_a_cancel_does_not_overrule_an_oom_in_the_log() -> None:
    """slurmstepd cancels a step after its OOM kill: the log's OOM stands."""
    log = classify("slurmstepd: error: Detected 1 oom-kill event(s) in step 9.0 cgroup.")
    out = combine(log, Sources(on_slurm=True, job_state="CANCELLED by 0"))
    assert out.cls == "host_oom_killed"
    assert {f.source: f.status for f in out.findings}["job_accounting"] == "silent"


def test_job_accounting_is_missing_on_slurm_and_absent_elsewhere() -> None:
    on_slurm = combine(classify("Killed"), Sources(on_slurm=True))
    assert "job_accounting" in on_slurm.missing
    assert on_slurm.cls == "killed_unknown"
    elsewhere = combine(classify("Killed"), Sources())
    assert all(f.source != "job_accounting" for f in elsewhere.findings)
