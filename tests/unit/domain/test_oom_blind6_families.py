"""Families added after the sixth blind part: each reads its wording (synthetic lines in the
families' own words), and a lookalike that must not be read as it."""

from __future__ import annotations

import pytest

from gpubot.domain.oom import classify


@pytest.mark.parametrize(
    "text",
    [
        "runtime: VirtualAlloc of 299704320 bytes failed with errno=1455\n"
        "fatal error: out of memory\n",
        "alloc_tensor_range: failed to allocate CPU buffer of size 437944320\n"
        "llama_model_load: error loading model: unable to allocate CPU buffer\n",
        "Nov 30 10:16:57 host-7 kernel: Killed process 799153 (python), UID 1000, "
        "total-vm:606096kB, anon-rss:68308kB, file-rss:13648kB, shmem-rss:0kB\n",
        "RuntimeError: unable to mmap 29764 bytes from file </torch_10182_3020184674_63991>: "
        "Cannot allocate memory (12)\n",
    ],
)
def test_host_memory_refused_or_reclaimed_in_other_words(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "host_oom_killed", triage.family


def test_a_killed_process_line_without_the_oom_killers_figures_is_not_host_memory() -> None:
    assert classify("supervisor: Killed process 42 (worker) after the deploy\n").cls != (
        "host_oom_killed"
    )


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: unable to write to file </torch_4242_1>: No space left on device (28)\n",
        "FATAL:  could not create shared memory segment: No space left on device\n"
        "DETAIL:  Failed system call was shmget(key=1, size=56, 03600).\n",
        "Crash in the allocator when running out of space in /dev/shm\n"
        "memory_server:34 terminated with signal 7 at PC=7f81381f0523\n",
    ],
)
def test_shared_memory_full_in_other_words(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "shm_exhausted", triage.family


def test_insufficient_gpu_memory_that_fails_an_executor_is_gpu_memory() -> None:
    text = (
        "[TRT-LLM] [RANK 1] [E] Failed to initialize executor on rank 1: Executor creation "
        "failed due to insufficient GPU memory.\n"
    )
    assert classify(text).cls == "cuda_oom"


def test_a_scheduler_saying_a_node_lacks_gpu_memory_is_not_an_out_of_memory() -> None:
    text = (
        "Warning  FailedScheduling  default-scheduler  0/3 nodes are available: 3 Insufficient "
        "GPU Memory in one device.\n"
    )
    assert classify(text).cls == "not_oom"
