"""The families of the thirty-first part (the hardest classes) and the thirty-second (data
and MLOps platforms and CI runners): each is read in its own words, and a lookalike beside
it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "> 'Error\n> while creating shared memory segment /dev/shm/nccl-AbC123 (size 9437184), "
        "error: No space\n> left on device (28)'\n",
        "OSError: No space left on device to allocate `multiprocessing.Value`\n",
    ],
)
def test_shared_memory_refused_with_enospc_is_shm(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


def test_enospc_on_a_disk_beside_multiprocessing_is_not_shm() -> None:
    text = "OSError: No space left on device: '/data/out.bin' (multiprocessing pool worker)\n"
    assert classify(text).cls != "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        "pyarrow.lib.ArrowMemoryError: realloc of size 4294967296 failed\n",
        "c++: fatal error: Killed signal terminated program cc1plus\n"
        "This is the kernel OOM killer, not a compiler bug.\n",
        "Task failed: Command exited with return code -9 due to RAM\n",
        "tests (x86-64) have been OOM-killed by the runner twice this week\n",
        "my memory is not enough and the training script always be killed\n",
        "it ends with Killed error again\nSolved by increasing RAM of the machine\n",
    ],
)
def test_host_memory_refused_or_confirmed_beside_a_kill_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        # a few bytes refused is not a shortage
        "pyarrow.lib.ArrowMemoryError: malloc of size 128 failed\n",
        # ten terabytes asked of the host: a corrupt input
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate 58395610206619 "
        "bytes. Error code 12 (Cannot allocate memory)\n",
        # an illegal address behind RMM's bad_alloc
        "MemoryError: Try lowering the partition size\n"
        "Original error:\n"
        "std::bad_alloc: CUDA error (failed to allocate 16 bytes) at: memory_resource.cpp:43: "
        "cudaErrorIllegalAddress an illegal memory access was encountered\n",
    ],
)
def test_a_tiny_absurd_or_illegal_allocation_is_not_a_host_kill(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "PerformanceWarning: Using synchronous transfer as pinned memory (1000000000 bytes) "
        "could not be allocated. The original error was: cudaErrorMemoryAllocation: out of "
        "memory\n",
        "The runner has received a shutdown signal. This can happen when the runner service "
        "is stopped.\nProcess completed with exit code 137.\n",
        "Out of Memory Error: failed to allocate data of size 256.0 MiB "
        "(260.3 MiB/476.8 MiB used)\n",
    ],
)
def test_a_staging_warning_a_runner_stop_or_an_apps_cap_is_not_an_oom(text: str) -> None:
    assert classify(text).cls == "not_oom"


def test_circlecis_killed_signal_is_a_kill_of_unknown_cause() -> None:
    assert classify('Received "killed" signal\n').cls == "killed_unknown"
