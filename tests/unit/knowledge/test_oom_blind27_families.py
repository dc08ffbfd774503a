"""The families of the twenty-seventh part (what an on-call engineer pastes from a Kubernetes
GPU cluster) and the twenty-eighth (desktops, notebooks, IDEs, other languages): each is read
in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "ERROR  TDRV:dmem_alloc_internal   Failed to alloc DEVICE memory: 268435456\n",
        "ERROR  TDRV:log_dev_mem   Failed to allocate 256.000MB (usage: tensors) on ND 0:NC 1\n",
        "XlaRuntimeError: RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to "
        "allocate 8.00G. That was not possible. There are 2.10G free.; (0x0x0_HBM0)\n",
    ],
)
def test_an_accelerators_device_memory_refused_is_accelerator_memory(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        # a host buffer refused on the same runtime
        "ERROR  TDRV:host_alloc   Failed to allocate host buffer for DMA ring\n",
        # XLA's word for a buffer it could not find, not memory
        "XlaRuntimeError: INVALID_ARGUMENT: device buffer was deleted\n",
    ],
)
def test_their_lookalikes_are_not_accelerator_memory(text: str) -> None:
    assert classify(text).cls != "cuda_oom"


def test_a_count_of_what_a_limit_oom_killed_is_a_host_kill() -> None:
    text = "The 512Mi reserve OOM-killed 14 cache mounts overnight; raising it to 1Gi.\n"
    assert classify(text).cls == "host_oom_killed"


def test_oom_killed_in_a_hypothetical_is_not_a_host_kill() -> None:
    assert classify("a pod can be OOM-killed if it passes its limit\n").cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "Failed to allocate device vector B (error code CUDA-capable device(s) is/are busy or "
        "unavailable)!\n",
        "cudaMalloc failed: cudaErrorDevicesUnavailable\n",
    ],
)
def test_a_gpu_busy_or_unavailable_is_not_an_oom(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "gpu_unavailable")
    assert triage.advice


def test_an_out_of_memory_error_code_on_an_allocation_is_still_gpu_memory() -> None:
    text = "Failed to allocate device vector B (error code out of memory)!\n"
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: Torch: Not enough memory: you tried to allocate 4GB. Buy new RAM!\n",
        "runtime: VirtualAlloc of bytes failed with errno=1455\n",
        "OSError: [WinError 8] Not enough memory resources are available to process this command\n",
        "the job keeps running out of memory, causing the workers getting killed\nzsh: killed\n",
    ],
)
def test_host_memory_refused_on_windows_or_told_beside_the_kill_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_a_kill_cured_by_more_memory_told_in_chinese_is_a_host_kill() -> None:
    # "memory 16G changed to 32G, then it was fine"
    text = (
        "python train.py shows killed in line 88\n"
        "\u5185\u5b5816G\u6539\u4e3a32G\u5c31\u597d\u4e86\n"
    )
    assert classify(text).cls == "host_oom_killed"


def test_a_cure_that_did_not_work_in_chinese_is_not_a_host_kill() -> None:
    # "changed 16G to 32G, still not solved"
    text = "Killed\n16G\u6539\u4e3a32G\u8fd8\u662f\u6ca1\u6709\u89e3\u51b3\n"
    assert classify(text).cls != "host_oom_killed"


def test_vs_codes_kernel_crash_is_a_death_of_unknown_cause() -> None:
    text = "The Kernel crashed while executing code in the current cell or a previous cell.\n"
    assert classify(text).cls == "killed_unknown"


def test_xlas_pinned_host_memory_refused_is_not_the_cards_memory() -> None:
    text = (
        "cuda_driver.cc:802] failed to alloc 1073741824 bytes on host: CUDA_ERROR_OUT_OF_MEMORY:"
        " out of memory\n"
        "device_host_allocator.h:46] could not allocate pinned host memory of size: 1073741824\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "pinned_host_memory")


def test_the_cards_own_allocation_refused_on_the_device_is_still_gpu_memory() -> None:
    text = (
        "cuda_driver.cc:802] failed to alloc 1073741824 bytes on device: CUDA_ERROR_OUT_OF_MEMORY\n"
    )
    assert classify(text).cls == "cuda_oom"
