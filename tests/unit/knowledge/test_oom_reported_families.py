"""Failures told by whatever reported them are read by family, and their lookalikes are not.

Each family gets a synthetic message in its reporter's words (not a corpus excerpt) and a
lookalike that shares its words but is not that failure.
"""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    ("text", "cls", "family"),
    [
        # GPU memory without "CUDA out of memory".
        ("RuntimeError: Allocation on device", "cuda_oom", "allocator_oom_header"),
        (
            "!!! Exception during processing !!! Allocation on device 3  ",
            "cuda_oom",
            "allocator_oom_header",
        ),
        (
            "[W101 10:00:00 CUDACachingAllocator.cpp:3000] memory allocation failed with OOM on "
            "device 2 while trying to allocate 1048576 bytes",
            "cuda_oom",
            "allocator_oom_warning",
        ),
        ("[shim] cuMemCreate failed: result=2", "cuda_oom", "driver_status_out_of_memory"),
        ("CUresult error res=2 func=cu_mem_map line=7", "cuda_oom", "driver_status_out_of_memory"),
        (
            "alloc.c:88 cudaMallocManaged returned error = 2",
            "cuda_oom",
            "driver_status_out_of_memory",
        ),
        (
            "EnforceNotMet: enforce allocating <= available failed, 9 > 8",
            "cuda_oom",
            "gpu_allocator_check",
        ),
        (
            "kernels.cu:12] device memory allocation failed: not enough memory",
            "cuda_oom",
            "gpu_allocator_check",
        ),
        # Host kills told by what did the killing.
        (
            "kernel: memory: usage 2097152kB, limit 2097152kB, failcnt 12",
            "host_oom_killed",
            "memcg_limit_reached",
        ),
        (
            "systemd[1]: train.service: systemd-oomd killed 3 process(es) in this unit.",
            "host_oom_killed",
            "userspace_oom_killer",
        ),
        (
            "systemd-oomd[700]: Marked /system.slice/train.service for killing due to memory "
            "pressure for /system.slice being 90.00% > 80.00%",
            "host_oom_killed",
            "userspace_oom_killer",
        ),
        (
            "slurmstepd: error: Exceeded job memory limit",
            "host_oom_killed",
            "batch_scheduler_memory_kill",
        ),
        (
            "=>> PBS: job killed: exceeded a memory resource limit",
            "host_oom_killed",
            "batch_scheduler_memory_kill",
        ),
        (
            "Your session crashed after using all available RAM.",
            "host_oom_killed",
            "notebook_memory_limit",
        ),
        (
            "kernel: Killed process 4242, UID 1000, (python) total-vm:9000000kB, anon-rss:1kB",
            "host_oom_killed",
            "kernel_oom_killer",
        ),
        # Shared memory named as a pool, a key or a check.
        (
            "Failed to increase the shared memory pool size to 1048576 bytes. Error: No space "
            "left on device",
            "shm_exhausted",
            "shm_pool_enospc",
        ),
        (
            "Unable to initialize shared memory key 'region_1' to requested size (8 bytes). "
            "Error: No space left on device",
            "shm_exhausted",
            "shm_pool_enospc",
        ),
        (
            "RuntimeError: Insufficient space in /dev/shm: 1 GiB required",
            "shm_exhausted",
            "dev_shm_too_small",
        ),
        (
            "store_runner.cc:83: System memory request exceeds memory available in /dev/shm.",
            "shm_exhausted",
            "dev_shm_too_small",
        ),
        # A SIGKILL reported by the scheduler, cause unknown.
        ("srun: error: node17: task 3: Killed", "killed_unknown", "sigkill_cause_unknown"),
        ("srun: error: gpu-a1: tasks 0-7: Killed", "killed_unknown", "sigkill_cause_unknown"),
        ("_job_complete: JobId=12 WTERMSIG 9", "killed_unknown", "sigkill_cause_unknown"),
    ],
)
def test_a_reporters_words_are_read_as_its_family(text: str, cls: str, family: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == (cls, family)
    assert triage.evidence


@pytest.mark.parametrize(
    "text",
    [
        "Allocation on device 0 finished in 3 ms, moving on",  # a progress line
        "cuMemCreate succeeded: result=0",  # status 0 is success
        "cudaMalloc returned error = 20",  # 20 is not 2
        "kernel: swap: usage 0kB, limit 9007199254740988kB, failcnt 0",
        "kernel: memory: usage 1024kB, limit 2048kB, failcnt 0",  # the limit was never hit
        "enforce allocating tensors on the device",  # prose about placement
        "Failed to increase the shared memory pool size to 1048576 bytes. Error: Connection "
        "timed out",  # the stub did not answer; /dev/shm was not full
        "systemd-oomd[700]: Considered 12 cgroups for killing, top candidates were:",
        "srun: error: node17: task 3: Exited with exit code 1",
        "SimGpuDeviceMemoryAllocator fail to allocate memory 1048576 bytes!! Result = 0",
        "Unable to initialize shared memory key 'region_4' to requested size (8 bytes). Error: "
        "Connection timed out",
    ],
)
def test_lookalikes_are_not_read_as_memory_failures(text: str) -> None:
    assert classify(text).cls not in (
        "cuda_oom",
        "cuda_oom_fragmentation",
        "host_oom_killed",
        "shm_exhausted",
        "killed_unknown",
    )


def test_a_shared_memory_pool_out_of_space_is_not_a_full_disk() -> None:
    # The words "No space left on device" alone are a full disk; said of a shared-memory pool
    # they are /dev/shm, which the shared-memory families try before the disk.
    text = (
        "InferenceServerException: Failed to increase the shared memory pool size for key "
        "'triton_python_backend_shm_region_1' to 67108864 bytes. Error: No space left on device"
    )
    assert classify(text).cls == "shm_exhausted"
    assert classify("OSError: [Errno 28] No space left on device: 'ckpt.pt'").family == "disk_full"


@pytest.mark.parametrize(
    ("text", "family"),
    [
        ("error: Unable to open shared memory region: '/input_simple'", "shared_memory_not_full"),
        (
            "cudaCheckError() failed compute outputs: too many resources requested for launch",
            "cuda_launch_failure",
        ),
    ],
)
def test_failures_near_memory_words_are_named_not_doubted(text: str, family: str) -> None:
    assert (classify(text).cls, classify(text).family) == ("not_oom", family)


@pytest.mark.parametrize(
    ("text", "cls", "family"),
    [
        # A GPU-sharing layer refusing an allocation past the container's share.
        (
            "[vgpu ERROR (pid:12 allocator.c:61)]: Device 1 OOM 8589934592 / 8000000000",
            "cuda_oom",
            "gpu_memory_quota",
        ),
        # The OOM killer's report without its kill line.
        (
            "kernel: [ 812.1] [  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents "
            "oom_score_adj name",
            "host_oom_killed",
            "kernel_oom_report",
        ),
        ("kernel: Tasks state (memory values in pages):", "host_oom_killed", "kernel_oom_report"),
        (
            "kernel: Memory cgroup stats for /kubepods/besteffort/pod42: anon 1048576",
            "host_oom_killed",
            "kernel_oom_report",
        ),
        # Slurm's job state, whole or cut to sacct's column.
        (
            "424242       train      gpu   OUT_OF_ME+    0:125",
            "host_oom_killed",
            "batch_scheduler_memory_kill",
        ),
        ("424242|train|OUT_OF_MEMORY|0:125", "host_oom_killed", "batch_scheduler_memory_kill"),
        (
            "JobState=OUT_OF_MEMORY Reason=OutOfMemory",
            "host_oom_killed",
            "batch_scheduler_memory_kill",
        ),
        # A notebook service restarting the kernel for its memory.
        (
            "Your notebook tried to allocate more memory than is available. It has restarted.",
            "host_oom_killed",
            "notebook_memory_limit",
        ),
        # Ray's report of killed workers, only its end in the log.
        (
            "(raylet) To adjust the kill threshold, set the environment variable "
            "`RAY_memory_usage_threshold` when starting Ray.",
            "host_oom_killed",
            "ray_memory_monitor",
        ),
    ],
)
def test_a_reports_own_words_are_read_without_its_headline(
    text: str, cls: str, family: str
) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == (cls, family)
    assert triage.evidence


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        # CUDA's and RMM's error names hold OUT_OF_MEMORY: the GPU's, not Slurm's job state.
        ("CUDA_ERROR_OUT_OF_MEMORY: out of memory", "cuda_oom"),
        ("status = ErrorCode.OUT_OF_MEMORY", "not_oom"),
        # top's and ps's headings are not the OOM killer's task table.
        ("  PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND", "not_oom"),
        ("[ pid ] uid tgid total_vm rss name", "not_oom"),
        # A score or a setting, not a quota refused (the word OOM alone: cannot tell).
        ("Device 0 OOM score adj 0 / 1000", "cannot_tell"),
        ("export RAY_memory_usage_threshold=0.9", "not_oom"),
        ("the notebook tried to allocate a GPU", "not_oom"),
    ],
)
def test_lookalikes_of_reports_without_their_headline(text: str, cls: str) -> None:
    assert classify(text).cls == cls


@pytest.mark.parametrize(
    ("text", "family"),
    [
        (
            "systemd-oomd[412]: Failed to kill any cgroups based on memory pressure: Invalid "
            "argument",
            "oom_killer_failed",
        ),
        (
            "Unable to initialize shared memory key 'shm_region_7' to requested size (64 bytes). "
            "Error: No such file or directory",
            "shared_memory_not_full",
        ),
    ],
)
def test_memory_machinery_that_failed_for_another_reason_is_named(text: str, family: str) -> None:
    assert (classify(text).cls, classify(text).family) == ("not_oom", family)


def test_an_oom_killer_that_killed_wins_over_one_that_failed() -> None:
    text = (
        "systemd-oomd[412]: Failed to kill any cgroups based on swap: Invalid argument\n"
        "systemd-oomd[412]: Killed /user.slice/app.scope due to memory pressure for /user.slice"
    )
    assert classify(text).cls == "host_oom_killed"


def test_a_shared_memory_key_out_of_space_stays_shared_memory() -> None:
    text = (
        "Unable to initialize shared memory key 'shm_region_7' to requested size (64 bytes). "
        "Error: No space left on device"
    )
    assert classify(text).cls == "shm_exhausted"
