"""The families of the thirty-fifth part (ML and GPU stacks outside Python) and the
thirty-sixth (databases, search and vector stores): each is read in its own words, and a
lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


def test_heavydbs_gpu_buffer_manager_is_gpu_memory() -> None:
    text = (
        "BufferMgr.cpp:410 ALLOCATION failed to find 512000000B throwing out of memory GPU_MGR:1\n"
    )
    assert classify(text).cls == "cuda_oom"


def test_its_cpu_buffer_manager_is_not_gpu_memory() -> None:
    text = (
        "BufferMgr.cpp:410 ALLOCATION failed to find 512000000B throwing out of memory CPU_MGR:0\n"
    )
    assert classify(text).cls != "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "The search pod OOMKills (exit 137) on the first query after start-up.\n",
        "[Bug]: load failed with an error, yet the queryNode is still oomkilled\n",
    ],
)
def test_an_oomkill_reported_in_a_sentence_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_a_hypothetical_oomkill_is_not_a_host_kill() -> None:
    assert classify("a pod that uses too much memory is OOMKilled: false\n").cls != (
        "host_oom_killed"
    )


def test_an_allocation_of_a_hundred_petabytes_is_absurd() -> None:
    text = (
        "ExecutionDispatch.cpp:159] Failed to allocate 15235361355721605120 bytes of memory\n"
        "MapDHandler.cpp:4929] Exception: Not enough host memory to execute the query\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "absurd_request")


@pytest.mark.parametrize(
    "text",
    [
        "called `Result::unwrap()` on an `Err` value: AllocationError(OutOfMemory(Device))\n",
        "[E:onnxruntime:Default, webgpu_context.cc:120 operator()] WebGPU device error(2): Out "
        "of memory\n",
        "wgpu error: Validation Error\n\nCaused by:\n    In Device::create_buffer\n"
        "      note: label = `mesh data buffer`\n    Not enough memory left.\n",
    ],
)
def test_wgpu_and_webgpu_out_of_device_memory_is_gpu_memory(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


def test_wgpus_host_allocation_is_not_gpu_memory() -> None:
    text = "called `Result::unwrap()` on an `Err` value: AllocationError(OutOfMemory(Host))\n"
    assert classify(text).cls != "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "THNN.lua:109: $ Torch: not enough memory: you tried to reallocate 11GB. Buy new RAM!\n",
        "ERROR: OutOfMemoryError()\nStacktrace:\n  [1] Array\n",
    ],
)
def test_lua_torch_and_julia_refusing_host_memory_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_nettys_direct_memory_cap_is_not_an_oom() -> None:
    text = (
        "io.netty.util.internal.OutOfDirectMemoryError: failed to allocate 65536 byte(s) of "
        "direct memory (used: 10429447, max: 10485760)\n"
    )
    assert classify(text).cls == "not_oom"


def test_a_bus_error_filling_a_small_shm_shown_empty_before_is_shm() -> None:
    text = (
        "shell> df -h /dev/shm\n"
        "Filesystem      Size  Used Avail Use% Mounted on\n"
        "shm              64M     0   64M   0% /dev/shm\n"
        "julia> A = SharedArray{Float64}(10_000_000);\n"
        "signal (7): Bus error\n"
    )
    assert classify(text).cls == "shm_exhausted"
