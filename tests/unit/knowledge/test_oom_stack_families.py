"""The twelfth part's second half: an inference runtime's arena refusal cut short, or on the
CPU provider; the OOM killer's task table seen only by its rows; a report that nodes ran low
on memory and workers were killed; NCCL's shared-memory transport named by its function; and
advice about running out of memory, which is not evidence. Each is read, and a lookalike
beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify

_ARENA = (
    "/build/onnxruntime/core/framework/bfc_arena.cc:376 void* "
    "onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*, bool, "
    "onnxruntime::WaitNotificationFn) "
)


@pytest.mark.parametrize(
    "text",
    [
        _ARENA + "Failed to alloc\n",
        _ARENA + "Failed to allocate\n",
        "Non-zero status code returned while running MatMul node. Status Message: "
        + _ARENA
        + "Failed to alloca\nThe model needs more VRAM than the card has.\n",
    ],
)
def test_an_arena_refusal_cut_short_is_the_gpu(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("cuda_oom", "onnxruntime_arena_cut")


def test_an_arena_line_that_goes_on_without_failing_is_not_read() -> None:
    text = _ARENA + "Extending allocation by 1048576 bytes\n"
    assert classify(text).family != "onnxruntime_arena_cut"


@pytest.mark.parametrize(
    "node",
    ["Conv node. Name:'conv_12_nchwc'", "ReorderInput node. Name:'NchwcReorder_3'"],
)
def test_an_arena_refusal_on_the_cpu_providers_layout_is_the_host(node: str) -> None:
    text = (
        f"[E:onnxruntime:, sequential_executor.cc:339 Execute] Non-zero status code returned "
        f"while running {node} Status Message: C:\\ort\\core\\framework\\bfc_arena.cc:330 "
        "onnxruntime::BFCArena::AllocateRawInternal Failed to allocate memory for requested "
        "buffer of size 123456789\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "onnxruntime_cpu_arena")


def test_the_same_refusal_on_a_cuda_node_stays_the_gpu() -> None:
    text = (
        "Non-zero status code returned while running Conv node. Name:'conv_12' Status Message: "
        + _ARENA
        + "Failed to allocate memory for requested buffer of size 123456789\n"
    )
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "rows",
    [
        # syslog, an older kernel's columns (nr_ptes, nr_pmds)
        "Mar  1 02:03:04 node7 kernel: [ 9912.102030] [ 4242]  1000  4242  8123456  6012345 "
        "   11890       8        0             0 python3\n"
        "Mar  1 02:03:04 node7 kernel: [ 9912.102033] [ 4250]     0  4250    45312      812 "
        "      90       3        0          -999 containerd\n",
        # dmesg -T, a newer kernel's columns (pgtables_bytes)
        "[Tue Apr  2 10:11:12 2024] [   3131]  1000  3131  9123456  7123456 58123456        0"
        "             0 torchrun\n",
    ],
)
def test_the_oom_killers_task_rows_alone_are_the_host(rows: str) -> None:
    triage = classify(rows)
    assert (triage.cls, triage.family) == ("host_oom_killed", "kernel_oom_task_rows")


@pytest.mark.parametrize(
    "text",
    [
        # ps and top: no bracketed pid
        "  4242 user      20   0 8123456 6012345  11890 R  99.0 38.2   1:02.03 python3\n",
        # a shell's job line
        "[1]+  Killed                  python train.py --epochs 3\n",
        # a bracketed pid with too few numbers after it
        "kernel: [ 9912.102030] [ 4242] 1000 4242 python3\n",
    ],
)
def test_other_tables_are_not_the_oom_killers(text: str) -> None:
    assert classify(text).family != "kernel_oom_task_rows"


@pytest.mark.parametrize(
    "text",
    [
        "The node was running low on memory and 3 workers were killed to free it.\n",
        "Workers killed on node 10.0.0.7 because it was running low on RAM\n",
    ],
)
def test_a_node_low_on_memory_with_workers_killed_is_the_host(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "memory_low_workers_killed")


@pytest.mark.parametrize(
    "text",
    [
        "WARNING: the node is running low on memory; no workers were killed yet.\n",
        "The node is running low on memory. Reduce the batch size to avoid being killed.\n",
        "Node memory usage is high (killing is disabled)\n",
    ],
)
def test_memory_running_low_with_nothing_killed_is_not_a_kill(text: str) -> None:
    assert classify(text).family != "memory_low_workers_killed"


@pytest.mark.parametrize(
    "text",
    [
        "misc/shmutils.cc:61 NCCL WARN ncclShmOpen failed to create the segment\n",
        "The ncclShmOpen error means the process could not allocate shared memory for NCCL.\n",
        "Init failed: unable to allocate shared memory for nccl in this container\n",
    ],
)
def test_ncclshmopen_failing_or_nccl_short_of_shared_memory_is_dev_shm(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("shm_exhausted", "nccl_shm_open_failed")


@pytest.mark.parametrize(
    "text",
    [
        # a peer's segment that was not there: not /dev/shm full
        "NCCL WARN ncclShmOpen failed: No such file or directory\n",
        # a CUDA call's invalid argument
        "NCCL WARN ncclShmOpen error: Cuda failure 'invalid argument'\n",
        # a kernel's per-block shared memory
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 98304, "
        "Hardware limit: 65536\n",
        # the function named, nothing failing
        "NCCL INFO ncclShmOpen created /dev/shm/nccl-abcdef of 9637888 bytes\n",
    ],
)
def test_other_shared_memory_words_are_not_nccls_shm_failing(text: str) -> None:
    assert classify(text).family != "nccl_shm_open_failed"


@pytest.mark.parametrize(
    "advice",
    [
        "INFO worker.py:88] CUDA graphs use 1~3 GiB per GPU. If you are running out of memory, "
        "consider decreasing `gpu_memory_utilization`.\n",
        "Tip: if you run out of GPU memory, lower the batch size.\n",
        "When you're running out of CUDA memory, try enforce_eager.\n",
    ],
)
def test_advice_about_running_out_of_gpu_memory_is_not_an_oom(advice: str) -> None:
    text = "RuntimeError: CUDA error: an illegal memory access was encountered\n" + advice
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "illegal_memory_access")


def test_a_real_oom_beside_that_advice_is_still_read() -> None:
    text = (
        "If you are running out of memory, consider decreasing `gpu_memory_utilization`.\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.15 GiB of which 1.02 GiB is free.\n"
    )
    assert classify(text).cls == "cuda_oom"
