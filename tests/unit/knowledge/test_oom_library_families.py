"""Libraries' own words for an exhausted GPU or host (RMM, Spark RAPIDS, CuPy, thrust, ONNX
Runtime, TensorRT, PaddlePaddle, cudaMallocAsync, pandas), a hedged list of possible causes,
and an exit status after a colon: each family is read, and a lookalike beside it is not."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    ("text", "family"),
    [
        (
            "MemoryError: std::bad_alloc: out_of_memory: CUDA error at: "
            "/opt/conda/include/rmm/mr/device/cuda_memory_resource.hpp",
            "rmm_device_memory",
        ),
        (
            "java.lang.OutOfMemoryError: Could not allocate native memory: std::bad_alloc: "
            "out_of_memory: RMM failure at:/src/rmm/mr/device/arena_memory_resource.hpp:159: "
            "Maximum pool size exceeded",
            "rmm_device_memory",
        ),
        (
            "WARN GpuDeviceManager: Initial RMM allocation(30000.0 MB) is larger than free "
            "memory(512.0 MB)\nERROR GpuDeviceManager: Could not initialize RMM",
            "rmm_pool_larger_than_free",
        ),
    ],
)
def test_rmm_device_memory_is_the_gpus_whatever_exception_wraps_it(text: str, family: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("cuda_oom", family)


def test_a_bare_bad_alloc_or_an_rmm_pool_that_starts_stays_on_the_host_side() -> None:
    assert classify("terminate called: MemoryError: std::bad_alloc").cls == "host_oom_killed"
    started = classify(
        "WARN GpuDeviceManager: Initial RMM allocation(300.0 MB) is larger than free "
        "memory(200.0 MB)\nINFO GpuDeviceManager: Initializing RMM POOLED 300.0 MB on gpuId 0"
    )
    assert started.cls != "cuda_oom"


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        (
            "com.nvidia.spark.rapids.jni.GpuSplitAndRetryOOM: GPU OutOfMemory: could not split",
            "cuda_oom",
        ),
        (
            "Lost task 3.0: com.nvidia.spark.rapids.jni.RetryOOM: task should retry operation",
            "cuda_oom",
        ),
        ("com.nvidia.spark.rapids.jni.CpuRetryOOM: CPU OutOfMemory", "host_oom_killed"),
        ("INFO RapidsExecutorPlugin: registered handler for RetryOOMException", "not_oom"),
    ],
)
def test_spark_rapids_retry_oom_names_the_device_it_ran_out_of(text: str, cls: str) -> None:
    assert classify(text).cls == cls


@pytest.mark.parametrize(
    ("text", "cls", "requested"),
    [
        (
            "cupy.cuda.memory.OutOfMemoryError: out of memory to allocate 1073741824 bytes "
            "(total 12373894656 bytes)",
            "cuda_oom",
            1073741824,
        ),
        (
            "Exception in main training loop: Out of memory allocating 25,600,000 bytes "
            "(allocated so far: 3,635,267,072 bytes).",
            "cuda_oom",
            25_600_000,
        ),
        # Host memory in no family's words: not CuPy's pool, and the log cannot tell more.
        (
            "Not enough host memory: out of memory to allocate the staging buffer",
            "cannot_tell",
            None,
        ),
    ],
)
def test_cupys_pool_wording_and_its_grouped_byte_counts(
    text: str, cls: str, requested: int | None
) -> None:
    triage = classify(text)
    assert triage.cls == cls
    assert triage.numbers.get("requested_bytes") == requested


def test_thrusts_algorithms_failing_to_allocate_on_the_device() -> None:
    thrust = classify(
        "terminate called after throwing an instance of 'thrust::system::system_error'\n"
        "  what():  parallel_for failed: out of memory"
    )
    assert (thrust.cls, thrust.family) == ("cuda_oom", "thrust_device_alloc")
    assert classify("bash: fork failed: out of memory").cls != "cuda_oom"


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        (
            "onnxruntime::BFCArena::AllocateRawInternal(size_t, bool) Failed to allocate memory "
            "for requested buffer of size 8388608000",
            "cuda_oom",
        ),
        (
            "BFCArena::AllocateRawInternal(size_t, bool) Failed to allocate memory for requested "
            "buffer of size 4585490524328388608",
            "not_oom",  # 4 EiB: another bug's symptom
        ),
        (
            "[E:onnxruntime:, bfc_arena.cc:331] BFCArena for Cpu: Failed to allocate memory for "
            "requested buffer of size 1048576",
            # the CPU provider's arena is no GPU's: a host allocation refused (low confidence,
            # since an arena may have a cap of its own)
            "host_oom_killed",
        ),
    ],
)
def test_onnx_runtimes_arena_on_the_gpu_not_on_the_cpu_nor_absurd(text: str, cls: str) -> None:
    assert classify(text).cls == cls


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        (
            "[TensorRT] ERROR: Requested amount of memory (150994944 bytes) could not be "
            "allocated. There may not be enough free memory for allocation to succeed.",
            "cuda_oom",
        ),
        ("[E] [TRT] safeRuntime.cpp (25) - Cuda Error in allocate: 2 (out of memory)", "cuda_oom"),
        ("[TensorRT] Try increasing the workspace size with setMaxWorkspaceSize()", "not_oom"),
    ],
)
def test_tensorrt_allocation_wordings_old_and_new(text: str, cls: str) -> None:
    assert classify(text).cls == cls


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        (
            "ResourceExhaustedError:\n\nOut of memory error on GPU 0. Cannot allocate "
            "98.000244MB memory on GPU 0, available memory is only 0.000000B.",
            "cuda_oom",
        ),
        ("Cannot allocate 1.531250GB memory on GPU 1, available memory is only", "cuda_oom"),
        ("Please check whether there is any other process using GPU 0.", "not_oom"),
    ],
)
def test_paddlepaddles_device_out_of_memory(text: str, cls: str) -> None:
    assert classify(text).cls == cls


def test_cuda_malloc_async_reports_its_request_and_device_limit_not_the_unset_fraction() -> None:
    triage = classify(
        "Allocation on device 0 would exceed allowed memory. (out of memory)\n"
        "Currently allocated     : 14.81 GiB\nRequested               : 320.00 MiB\n"
        "Device limit            : 15.92 GiB\nFree (according to CUDA): 0 bytes\n"
        "PyTorch limit (set by user-supplied memory fraction)\n: 17179869184.00 GiB"
    )
    assert (triage.cls, triage.family) == ("cuda_oom", "cuda_malloc_async_limit")
    assert classify("Allocation on device 0 succeeded after retry").cls == "not_oom"


def test_pandas_c_parser_out_of_memory_is_host_memory() -> None:
    pandas = classify("pandas.errors.ParserError: Error tokenizing data. C error: out of memory")
    assert pandas.cls == "host_oom_killed"
    assert classify("RuntimeError: CUDA error: out of memory").cls == "cuda_oom"


def test_a_list_of_possible_causes_is_not_an_oom_kill() -> None:
    ray = classify(
        "Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a "
        "connection error code 2. End of file. There are some potential root causes. (1) The "
        "process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop "
        "--force is called.",
        exit_code=137,
    )
    assert ray.cls == "killed_unknown"
    told = classify("Task was killed due to the node running low on memory.")
    assert told.cls == "host_oom_killed"


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        (
            "command terminated with non-zero exit code: Error executing in Docker Container: 137",
            "killed_unknown",
        ),
        (
            "failed to solve: executor failed running [/bin/sh -c make]: exit code: 137",
            "killed_unknown",
        ),
        ("exit code: 0, peer 10.0.0.7:137 closed", "not_oom"),
    ],
)
def test_an_exit_status_of_137_after_a_colon(text: str, cls: str) -> None:
    assert classify(text).cls == cls
