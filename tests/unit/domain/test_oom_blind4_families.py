"""Families added after the fourth blind part: each reads its wording (synthetic lines in the
families' own words), and a lookalike that must not be read as it."""

from __future__ import annotations

import pytest

from gpubot.domain.oom import classify


@pytest.mark.parametrize(
    "text",
    [
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=405 error=2 : out of "
        "memory\nSegmentation fault (core dumped)\n",
        "F0101 12:00:00.000000  4242 syncedmem.cpp:56] Check failed: error == cudaSuccess (2 vs. "
        "0)  out of memory\n*** Check failure stack trace: ***\n",
        "terminate called after throwing an instance of 'CUDA::error'\n  what():  /src/alloc/"
        "CudaMallocPolicy.hpp(42):\nerror: out of memory\n",
    ],
)
def test_old_and_c_plus_plus_cuda_wordings_are_gpu_memory(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "cuda_oom", triage.family


@pytest.mark.parametrize(
    "text",
    [
        # another CUDA error code in the same glog check is not memory
        "F0101 12:00:00.000000  4242 math_functions.cu:79] Check failed: error == cudaSuccess "
        "(8 vs. 0)  invalid device function\n",
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=50 error=30 : unknown "
        "error\n",
    ],
)
def test_other_cuda_error_codes_are_not_memory(text: str) -> None:
    assert classify(text).cls == "not_oom"


@pytest.mark.parametrize(
    "text",
    [
        # Ray 2.x's memory monitor
        "Memory on the node (IP: 10.0.0.7, ID: abc) where the task (task ID: def, name=train, "
        "pid=42, memory used=3.10GB) was running was 60.1GB / 63.0GB (0.954), which exceeds the "
        "memory usage threshold of 0.95. Ray killed this worker (ID: 0a1b) because it was the "
        "most recently scheduled task\n",
        # runc refusing to start a container whose init the kernel killed
        'Error: container create failed: time="2024-01-01T00:00:00Z" level=error msg="runc '
        "create failed: unable to start container process: container init was OOM-killed "
        '(memory limit too low?)"\n',
        # TH's CPU allocator (Torch 0.x)
        "RuntimeError: $ Torch: not enough memory: you tried to allocate 64GB. Buy new RAM! at "
        "/pytorch/aten/src/TH/THGeneral.cpp:201\n",
    ],
)
def test_host_memory_in_other_words(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "host_oom_killed", triage.family


def test_a_memory_threshold_without_a_kill_is_not_host_memory() -> None:
    text = "INFO memory_monitor.py:120 -- memory usage is below the memory usage threshold\n"
    assert classify(text).cls == "not_oom"


@pytest.mark.parametrize(
    "text",
    [
        "[worker-0] terminated with exit code (137). Reason [Error]. Message:\n",
        " 20%|████                | 216/1063 [00:27<02:17,  6.17it/s]Killed\n",
    ],
)
def test_sigkill_in_brackets_or_after_a_progress_bar(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


def test_an_exit_code_in_brackets_other_than_137_is_not_sigkill() -> None:
    assert classify("[worker-0] terminated with exit code (1). Reason [Error].\n").cls == "not_oom"


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        # a request larger than any GPU holds, on a device whose size the log does not say
        (
            "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 300000.00 MiB on device 0: "
            "cudaMalloc failed: out of memory\n",
            "not_oom",
        ),
        # the same wording for a request a card can hold is a real out-of-memory
        (
            "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9216.00 MiB on device 0: "
            "cudaMalloc failed: out of memory\n",
            "cuda_oom",
        ),
        # a zero-byte request is a size bug upstream, not a full card
        (
            "E tensorflow/core/common_runtime/bfc_allocator.cc:244] tried to allocate 0 bytes\n"
            "F tensorflow/core/common_runtime/gpu/gpu_device.cc:103] EigenAllocator for GPU ran "
            "out of memory when allocating 0. See error logs for more detailed info.\n",
            "not_oom",
        ),
    ],
)
def test_requests_no_card_could_serve_are_another_bug(text: str, cls: str) -> None:
    assert classify(text).cls == cls
