"""Each family of evidence, in the wordings frameworks really print, and the over-claims it
must not make. The corpus tests hold the verbatim excerpts; these pin one wording per family."""

from __future__ import annotations

import time

import pytest

from gpubot.knowledge.oom.triage import classify

PT2_HINT = (
    "If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
)


@pytest.mark.parametrize(
    ("text", "family"),
    [
        ("RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED", "cudnn_cublas_alloc_failed"),
        (
            "E tensorflow/stream_executor/cuda/cuda_driver.cc:806] failed to allocate 3.90G "
            "(4190303232 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
            "cuda_runtime_oom",
        ),
        (
            "W external/xla/xla/stream_executor/gpu/gpu_cudamallocasync_allocator.cc:224] "
            "cuMemAllocAsync failed to allocate 2.00GiB (2147483648 bytes): "
            "CUDA_ERROR_OUT_OF_MEMORY: out of memory",
            "cuda_runtime_oom",
        ),
        (
            "tensorflow.python.framework.errors_impl.ResourceExhaustedError: failed to allocate "
            "memory [Op:AddV2]",
            "tf_resource_exhausted",
        ),
        (
            "RuntimeError: NCCL Error 1: unhandled cuda error (run with NCCL_DEBUG=INFO for "
            "details). Last error: Cuda failure 'out of memory'",
            "nccl_cuda_oom",
        ),
        (
            "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED:\n"
            "Out of memory while trying to allocate 1073741824 bytes.",
            "xla_resource_exhausted",
        ),
        (
            "Tried to allocate 2.00 GiB (GPU 0; 7.93 GiB total capacity; 5.10 GiB already "
            "allocated; 1.56 GiB free; 5.20 GiB reserved in total by PyTorch)",
            "pytorch_allocator_tail",
        ),
        (
            "ValueError: Free memory on device (6.61/23.64 GiB) on startup is less than desired "
            "GPU memory utilization (0.9, 21.28 GiB). Decrease GPU memory utilization or reduce "
            "GPU memory used by other processes.",
            "inference_kv_cache",
        ),
    ],
)
def test_cuda_oom_said_in_other_words(text: str, family: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("cuda_oom", family)
    assert triage.confidence in ("high", "medium")


def test_a_message_wrapped_over_two_lines_cites_both_lines() -> None:
    triage = classify(
        "XlaRuntimeError: RESOURCE_EXHAUSTED:\nOut of memory while trying to allocate 1073741824 "
        "bytes.\nnext line"
    )
    assert triage.evidence[:2] == (
        "XlaRuntimeError: RESOURCE_EXHAUSTED:",
        "Out of memory while trying to allocate 1073741824 bytes.",
    )
    assert triage.numbers["requested_bytes"] == 1073741824


def test_numbers_broken_over_two_lines_are_read_together() -> None:
    triage = classify(
        "RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 15.90 GiB total "
        "capacity; 13.13 GiB already allocated;\n415.88 MiB free; 14.80 GiB reserved in total by "
        "PyTorch)"
    )
    assert triage.cls == "cuda_oom_fragmentation"
    assert triage.numbers["reserved_bytes"] > triage.numbers["allocated_bytes"]


@pytest.mark.parametrize(
    "text",
    [
        # PyTorch 1.0-1.3: "cached" is already cached-minus-allocated.
        "RuntimeError: CUDA out of memory. Tried to allocate 238.00 MiB (GPU 0; 79.15 GiB total "
        "capacity; 77.80 GiB already allocated; 100.00 MiB free; 1.07 GiB cached)",
        # "Pytorch" with a lower-case t, and a reserve that is 1.4 % of an 80 GB card.
        "RuntimeError: CUDA out of memory. Tried to allocate 238.00 MiB (GPU 0; 79.15 GiB total "
        "capacity; 76.73 GiB already allocated; 5.19 MiB free; 77.80 GiB reserved in total by "
        "Pytorch)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 238.00 MiB. GPU 0 has a "
        "total capacity of 79.15 GiB of which 5.19 MiB is free. Of the allocated memory 76.73 GiB "
        "is allocated by PyTorch, and 1.07 GiB is reserved by PyTorch but unallocated.",
    ],
)
def test_fragmentation_is_the_idle_reserve_against_the_request_in_each_versions_words(
    text: str,
) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("cuda_oom_fragmentation", "allocator_idle_reserve")
    assert triage.numbers["reserved_unallocated_bytes"] >= 1.06 * 1024**3


def test_rounding_of_the_printed_numbers_is_not_taken_for_fragmentation() -> None:
    # 3.00 GiB - 2.98 GiB could be anything from 10 to 30 MiB: not shown to exceed 16 MiB.
    triage = classify(
        "RuntimeError: CUDA out of memory. Tried to allocate 16.00 MiB (GPU 0; 3.94 GiB total "
        "capacity; 2.98 GiB already allocated; 14.25 MiB free; 3.00 GiB reserved in total by "
        "PyTorch)"
    )
    assert triage.cls == "cuda_oom"


@pytest.mark.parametrize(
    ("text", "family"),
    [
        (
            "RuntimeError: unable to write to file </torch_18692_1954506624>: No space left on "
            "device (28)",
            "torch_shm_write",
        ),
        (
            '  File "/usr/lib/python3.10/multiprocessing/synchronize.py", line 57, in __init__\n'
            "    sl = self._semlock = _multiprocessing.SemLock(\n"
            "OSError: [Errno 28] No space left on device",
            "semlock_enospc",
        ),
    ],
)
def test_dev_shm_without_the_words_bus_error(text: str, family: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("shm_exhausted", family)


def test_enospc_on_an_ordinary_disk_is_not_shm() -> None:
    triage = classify(
        "OSError: [Errno 28] No space left on device: '/data/checkpoints/step_1000.pt'"
    )
    assert (triage.cls, triage.family) == ("not_oom", "disk_full")


@pytest.mark.parametrize(
    ("text", "family"),
    [
        (
            "Message: The node was low on resource: memory. Container trainer was using "
            "31457280Ki, which exceeds its request of 16Gi.",
            "kubelet_memory_eviction",
        ),
        (
            "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on "
            "memory.",
            "ray_memory_monitor",
        ),
        (
            "(raylet) node_manager.cc:3277: 2 Workers (tasks / actors) killed due to memory "
            "pressure (OOM), 0 Workers crashed due to other reasons",
            "ray_memory_monitor",
        ),
    ],
)
def test_host_memory_pressure_that_is_not_a_cgroup_oomkill(text: str, family: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", family)


def test_docker_inspect_oomkilled_false_is_not_a_memory_kill() -> None:
    triage = classify('"ExitCode": 137,\n"OOMKilled": false,')
    assert triage.cls == "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate more than 1EB memory.",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 900.00 GiB. GPU 0 has a "
        "total capacity of 79.15 GiB of which 70.00 GiB is free.",
    ],
)
def test_an_absurd_request_is_another_bugs_symptom(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "absurd_request")
    assert any("shape" in a for a in triage.advice)


def test_a_request_a_few_times_the_card_is_still_a_capacity_problem() -> None:
    triage = classify(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 55.57 GiB. GPU 0 has a "
        "total capacity of 12.00 GiB of which 9.02 GiB is free."
    )
    assert triage.cls == "cuda_oom"
    assert any("larger than the whole GPU" in a for a in triage.advice)


def test_the_nodes_gpu_size_judges_a_request_the_message_does_not_size() -> None:
    text = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 218.96 GiB"
    assert classify(text).cls == "cuda_oom"
    assert classify(text, device_bytes=8 * 1024**3).cls == "not_oom"


@pytest.mark.parametrize(
    ("text", "family"),
    [
        ("RuntimeError: CUDA error: device-side assert triggered", "device_side_assert"),
        (
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "illegal_memory_access",
        ),
        (
            "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, "
            "OpType=ALLREDUCE) ran for 600060 milliseconds before timing out.",
            "nccl_timeout",
        ),
        (
            "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).",
            "driver_mismatch",
        ),
        (
            "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
            "off the bus.",
            "gpu_xid",
        ),
        ('Exception in thread "main" java.lang.OutOfMemoryError: Java heap space', "java_heap"),
    ],
)
def test_hard_negatives_stay_not_oom_and_get_their_own_advice(text: str, family: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", family)
    assert triage.advice


def test_device_side_assert_advice_points_at_indices_and_launch_blocking() -> None:
    advice = " ".join(classify("CUDA error: device-side assert triggered").advice)
    assert "CUDA_LAUNCH_BLOCKING=1" in advice
    assert "num_classes" in advice


def test_a_liveness_kill_is_not_an_oom_and_a_requested_stop_is_not_either() -> None:
    assert classify("Liveness probe failed: HTTP probe failed", exit_code=137).family == (
        "liveness_probe_kill"
    )
    stopped = classify("+ supervisorctl restart all\nExited with code 137")
    assert (stopped.cls, stopped.family) == ("not_oom", "stop_requested")


@pytest.mark.parametrize(
    "text",
    [
        "Killed",
        "./train.sh: line 18:    36 Killed                  python3 train.py",
        "torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0",
        "Process finished with exit code 137 (interrupted by signal 9: SIGKILL)",
        "command terminated with exit code 137",
    ],
)
def test_a_sigkill_with_no_cause_is_killed_unknown(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("killed_unknown", "sigkill_cause_unknown")


def test_long_lines_cost_linear_time() -> None:
    # Lines that almost match many families, a megabyte each: no catastrophic backtracking.
    hostile = "\n".join(
        [
            "RESOURCE_EXHAUSTED: " + "x " * 500_000,
            "Tried to allocate 1" + "1" * 1_000_000,
            "/dev/shm" + "a" * 1_000_000,
            "ResourceExhaustedError " + "y" * 1_000_000,
        ]
    )
    start = time.perf_counter()
    triage = classify(hostile)
    assert time.perf_counter() - start < 20  # generous: a quadratic scan takes hours
    # The last 2 MiB read hold /dev/shm with no failure beside it: no memory words either.
    assert triage.cls == "not_oom"
