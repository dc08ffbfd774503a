"""The families of the twenty-fifth part (host-side and ambiguous deaths beyond PyTorch) and
the twenty-sixth (accelerator memory in its rarer wordings): each is read in its own words,
and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory\n",
        "vkAllocateMemory failed: VK_ERROR_OUT_OF_DEVICE_MEMORY\n",
        "terminate called after throwing an instance of 'vk::OutOfDeviceMemoryError'\n",
        "CUDA error: src/tree/updater_gpu_hist.cu(712): out of memory\n",
    ],
)
def test_vulkan_and_a_cuda_error_naming_its_source_line_are_gpu_memory(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        # the host's memory, as Vulkan names it
        "vkAllocateMemory failed: VK_ERROR_OUT_OF_HOST_MEMORY\n",
        # another CUDA error at a source line
        "CUDA error: src/tree/updater_gpu_hist.cu(712): an illegal memory access was encountered\n",
    ],
)
def test_their_lookalikes_are_not_gpu_memory(text: str) -> None:
    assert classify(text).cls != "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "Killed\n\nI moved to a 16gb instance and it worked.\n",
        "error: exit status 137\nit completed with a memory limit of 2G instead of 512M\n",
        "Killed\nWe solved this by increasing the RAM of the node.\n",
        "Process finished with exit code 137\n"
        "I increased the memory limit to 4Gi and that fixed it\n",
    ],
)
def test_a_kill_that_more_memory_cured_is_a_host_kill(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "kill_cured_by_more_memory")


@pytest.mark.parametrize(
    "text",
    [
        # no kill for the cure to explain
        "I increased the memory limit to 4Gi and that fixed it\n",
        # a cure that did not work, or the card's memory
        "Killed\nI increased the RAM to 32GB but it still fails\n",
        "Killed\nI increased the GPU memory fraction to 0.9 and it worked\n",
    ],
)
def test_a_cure_without_a_kill_or_that_failed_is_not_a_host_kill(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "g++: fatal error: Killed signal terminated program cc1plus\ncompilation terminated.\n",
        "c++: fatal error: Morto signal terminated program lto1\n",
        "\u8fdb\u7a0b\u7ecf\u5e38\u88abkill\n",
        "DAMN ! worker 3 (pid: 2211) died, killed by signal 9 :( trying respawn ...\n",
    ],
)
def test_a_compiler_pass_or_a_worker_killed_with_no_cause_is_a_kill_of_unknown_cause(
    text: str,
) -> None:
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        # another signal took the compiler pass
        "g++: fatal error: Segmentation fault signal terminated program cc1plus\n",
        # a question of why, in Chinese
        "\u4e3a\u4ec0\u4e48\u8fdb\u7a0b\u4f1a\u88abkill\n",
    ],
)
def test_their_lookalikes_are_not_kills(text: str) -> None:
    assert classify(text).cls != "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        "*** HARAKIRI ON WORKER 2 (pid: 311, try: 1) ***\n"
        "DAMN ! worker 2 (pid: 311) died, killed by signal 9 :( trying respawn ...\n",
        "worker 1 (pid: 77) is taking too much time to die...NO MERCY !!!\n"
        "DAMN ! worker 1 (pid: 77) died, killed by signal 9 :( trying respawn ...\n",
    ],
)
def test_a_worker_killed_for_a_timeout_or_a_slow_stop_is_not_an_oom(text: str) -> None:
    assert classify(text).cls == "not_oom"


@pytest.mark.parametrize(
    "text",
    [
        "DAMN ! worker 1 (pid: 9) died, killed by signal 9\n"
        "when the OS kills uwsgi because of OOM the workers respawn\n",
        "Celery tasks are stopped by `oom_reaper` once the container passes its limit\n",
        "syslog is full of oom_reaper messages\n",
        "Job 7.0 in status 2 put on hold by SYSTEM_PERIODIC_HOLD due to memory usage 4000000.\n",
        "Job has gone over cgroup memory limit of 2048 megabytes.\n",
        "Malloc returns null: len=420642816 in mesh alloc, total 844526948\nKilled\n",
        "memory kept building up, eventually dropping to 0% available memory\n"
        "then the container is killed\n",
    ],
)
def test_host_memory_told_by_what_stopped_the_job_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        # locked memory refused, and the limit named
        "Unable to lock JVM Memory: error=12,reason=Cannot allocate memory\n"
        "Increase RLIMIT_MEMLOCK, soft limit: 65536, hard limit: 65536\n",
        # earlyoom could not kill anything
        "earlyoom[12]: low memory! at or below SIGTERM limits: mem  1.66%\n"
        'earlyoom[12]: sending SIGTERM to process 90 uid 1000 "java"\n'
        "earlyoom[12]: process 90 did not exit\n"
        "earlyoom[12]: kill failed: Timer expired\n",
        # an application's own memory cap refused a query
        "DB::Exception: (total) memory limit exceeded: would use 9.31 GiB, maximum: 9.00 GiB."
        " (MEMORY_LIMIT_EXCEEDED)\n",
    ],
)
def test_memory_words_with_a_known_cause_that_is_not_an_oom(text: str) -> None:
    assert classify(text).cls == "not_oom"


@pytest.mark.parametrize(
    "text",
    [
        "It appears as if there is not enough space for /dev/shm/vader_segment.host.0 (the\n"
        "shared-memory backing file).\n",
        "the browser crashed; it was caused by too little `/dev/shm` capacity\n",
        "/dev/shm in the runner is limited to 64MB, and Chrome crashes because of it\n",
    ],
)
def test_shared_memory_named_too_small_for_what_failed_is_shm(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        # a size stated, nothing failed
        "/dev/shm in the runner is limited to 64MB by default\n",
        # advice
        "if /dev/shm is limited to 64MB, Chrome may crash\n",
    ],
)
def test_a_small_shm_stated_without_a_failure_is_not_shm(text: str) -> None:
    assert classify(text).cls != "shm_exhausted"
