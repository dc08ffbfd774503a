"""Memory cgroups at their limit, the OOM killer named in prose, a scheduler's hard limit, and caps
that are not an OOM (SHMMAX, a cache's own memory cap, a driver mismatch): each family is read, and
its lookalikes are not.

Each family gets a synthetic message in its reporter's words (not a corpus excerpt) and a
lookalike that shares its words but is not that failure. None of these lookalikes may come
back as a confident "not an OOM" when it still holds unexplained memory words.
"""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.reported import memcg_files_at_limit
from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    ("text", "cls", "family"),
    [
        # A memory cgroup's own files, read by hand: the value alone on the next line...
        (
            "$ cat memory.max_usage_in_bytes\n2147483648\n$ cat memory.limit_in_bytes\n2147483648",
            "host_oom_killed",
            "memcg_usage_at_limit",
        ),
        # ... or on the same line.
        (
            "memory.usage_in_bytes: 1073741824\nmemory.limit_in_bytes: 1073000000",
            "host_oom_killed",
            "memcg_usage_at_limit",
        ),
        # cgroup v2's memory.events counts the kills.
        ("low 0\nhigh 0\nmax 12\noom 3\noom_kill 3", "host_oom_killed", "memcg_oom_kill_count"),
        # What killed a unit, as systemd says it.
        (
            "systemd[1]: app.service: A process of this unit has been killed by the OOM killer.",
            "host_oom_killed",
            None,
        ),
        ("worker.service was killed by the kernel oom killer", "host_oom_killed", None),
        # Moab's hard limit: it deletes the job.
        ("job 42 exceeded MEM usage hard limit (900 > 512)", "host_oom_killed", None),
        # A SysV segment over SHMMAX is a kernel setting, not memory that ran out.
        (
            "FATAL:  could not create shared memory segment: Invalid argument\n"
            "DETAIL:  Failed system call was shmget(key=1, size=99, 03600).",
            "not_oom",
            "shm_segment_over_kernel_limit",
        ),
        # A store at its own memory cap refuses writes; nothing is killed.
        (
            "(error) OOM command not allowed when used memory > 'maxmemory'.",
            "not_oom",
            "application_memory_cap",
        ),
        # A CUDA driver that does not match the display driver: setup, not memory.
        (
            "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH\nfailed to register CUDA shared memory region 'x'",
            "not_oom",
            "driver_mismatch",
        ),
        # cudaMalloc failing because of an earlier illegal access is that access.
        (
            "pool.cpp:12 cudaMalloc failed: an illegal memory access was encountered",
            "not_oom",
            "illegal_memory_access",
        ),
    ],
)
def test_family_is_read(text: str, cls: str, family: str | None) -> None:
    triage = classify(text)
    assert triage.cls == cls, triage
    if family is not None:
        assert triage.family == family
    assert triage.evidence, "the verdict cites the lines it rests on"


@pytest.mark.parametrize(
    "text",
    [
        # A limit that is not reached, or that is "no limit".
        "memory.max_usage_in_bytes 524000000\nmemory.limit_in_bytes 1048576000",
        "memory.usage_in_bytes 4096000\nmemory.limit_in_bytes 9223372036854771712",
        # A usage with no limit beside it says nothing about a limit.
        "memory.usage_in_bytes\n524288000",
        # No kill counted.
        "oom 0\noom_kill 0",
        # A soft limit warns; it does not delete the job.
        "job 42 exceeded MEM usage soft limit",
    ],
)
def test_lookalike_is_not_a_host_oom(text: str) -> None:
    triage = classify(text)
    assert triage.cls != "host_oom_killed", triage
    assert not (triage.cls == "not_oom" and triage.confidence in ("high", "medium")), triage


def test_cudamalloc_out_of_memory_is_still_a_gpu_oom() -> None:
    """The guard names other errors only: cudaMalloc failing for memory stays a GPU OOM."""
    assert classify("cudaMalloc failed: out of memory").cls == "cuda_oom"


def test_memcg_files_read_the_next_line_only_when_it_is_a_number() -> None:
    lines = ["cat memory.max_usage_in_bytes", "cat memory.limit_in_bytes", "1000000"]
    assert memcg_files_at_limit(lines) == ()
