"""The families of the nineteenth and twentieth parts: each is read in its own words, and a
lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


def test_a_bus_error_with_the_shm_cure_a_few_lines_on_is_shm() -> None:
    text = (
        "Bus error (core dumped) during eval\n\nin docker?\n\nyes\n\n"
        "that is about memory size\n"
        'run the container with "--shm-size 8G"\n'
    )
    assert classify(text).cls == "shm_exhausted"


def test_a_bus_error_far_from_any_shm_word_is_not_shm() -> None:
    text = "Bus error (core dumped)\n" + "unrelated line\n" * 12 + "we set --shm-size 8G\n"
    assert classify(text).cls != "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        "The container is killed by Kubernetes when memory crosses the defined limit.\n",
        "pods were killed by the kubelet as their memory exceeded the limit during load\n",
    ],
)
def test_a_kill_by_the_orchestrator_for_memory_over_its_limit_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_a_kill_by_the_orchestrator_for_gpu_memory_is_not_a_host_kill() -> None:
    text = "killed by Kubernetes when GPU memory exceeds the limit set by the sharing plugin\n"
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "# There is insufficient memory for the Java Runtime Environment to continue.\n",
        "# Native memory allocation (malloc) failed to allocate 1048576 bytes for AllocateHeap\n",
        "# Native memory allocation (mmap) failed to map 262144 bytes for committing memory\n",
    ],
)
def test_the_jvm_refused_native_memory_is_a_host_allocation(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_the_java_heap_is_still_not_an_oom() -> None:
    text = 'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space\n'
    assert classify(text).cls == "not_oom"


def test_a_memory_budget_of_zero_restarts_workers_by_setting_not_for_memory() -> None:
    text = "distributed.nanny.memory - WARNING - Worker tcp://w:1 exceeded 0% memory budget.\n"
    assert classify(text).cls != "host_oom_killed"


def test_a_real_memory_budget_exceeded_is_a_host_kill() -> None:
    text = "distributed.nanny.memory - WARNING - Worker tcp://w:1 exceeded 95% memory budget.\n"
    assert classify(text).cls == "host_oom_killed"


def test_a_gpu_quota_usage_near_2_to_the_64_is_broken_accounting() -> None:
    text = "[vgpu ERROR (allocator.c:53)]: Device 0 OOM 18446744073707737660 / 24146608128\n"
    assert classify(text).cls != "cuda_oom"


def test_a_gpu_quota_at_its_limit_is_a_gpu_oom() -> None:
    text = "[vgpu ERROR (allocator.c:53)]: Device 0 OOM 25769803776 / 24146608128\n"
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "srun: error: Out Of Memory\n",
        "slurmstepd: error: Detected 1 oom_kill event; step 42.0: Out Of Memory\n",
    ],
)
def test_srun_and_slurmstepd_out_of_memory_are_host_kills(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_srun_failing_for_another_reason_is_not_an_oom() -> None:
    text = "srun: error: Unable to allocate resources: Invalid generic resource (gres)\n"
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "the predictor pods error out and get OOMkilled after the download\n",
        "seldon deployment failing, pods getting OOM killed\n",
    ],
)
def test_oom_killed_in_any_case_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"
