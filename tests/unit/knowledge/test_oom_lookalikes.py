"""Lookalikes: text near a memory failure's wording that is not one (other exit codes, quotas,
full disks, crashes, schedulers' capacity checks): each must not be read as memory.

Synthetic lines in each family's own words."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify

ENOSPC_ON_SAVE = """OSError: [Errno 28] No space left on device
  File "train.py", line 210, in save
    torch.save(state, path)
  File "/opt/conda/lib/python3.10/site-packages/torch/serialization.py", line 441, in save
    _save(obj, opened_zipfile, pickle_module, pickle_protocol)
"""


def _launcher(code: str) -> str:
    return (
        "[2024-05-01 10:00:01,100] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 41\n"
        "[2024-05-01 10:00:01,120] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 42\n"
        "[2024-05-01 10:00:01,150] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', "
        f"'-u', 'train.py', '--local_rank=1'] exits with return code = {code}\n"
    )


def test_ray_memory_settings_or_a_full_disk_are_not_its_monitor() -> None:
    """Ray's advice about its monitor's settings, or a disk 95 % full, is no memory kill."""
    advice = "To disable worker killing, set the environment variable RAY_memory_monitor_refresh_ms"
    assert classify(advice).cls == "not_oom"
    assert classify("More than 95% of the disk on node worker-3 is used").cls == "not_oom"


def test_tf_quota_exhaustion_and_the_oom_hint_are_not_gpu_memory() -> None:
    """A ResourceExhaustedError for a quota, or TF's hint about what to do when OOM happens,
    says nothing of an exhausted GPU."""
    quota = "tensorflow.python.framework.errors_impl.ResourceExhaustedError: Quota exceeded"
    assert classify(quota).cls == "not_oom"
    hint = (
        "Hint: If you want to see a list of allocated tensors when OOM happens, add "
        "report_tensor_allocations_upon_oom to RunOptions for current allocation info."
    )
    assert classify(hint).cls == "not_oom"


def test_enospc_before_a_checkpoint_save_traceback_is_a_full_disk() -> None:
    """The same error before torch.save's frames is a full disk, not /dev/shm."""
    triage = classify(ENOSPC_ON_SAVE)
    assert (triage.cls, triage.family) == ("not_oom", "disk_full")


def test_launcher_teardown_after_a_crash_or_an_error_is_not_a_sigkill() -> None:
    """DeepSpeed's launcher killing its workers after one exited with -11 (SIGSEGV) or 1 is
    the consequence of that exit, not a SIGKILL of unknown cause."""
    for code in ("-11", "1"):
        triage = classify(_launcher(code))
        assert (triage.cls, triage.family) == ("not_oom", "launcher_child_exit"), code


def test_the_sigkill_handler_name_is_not_a_signal() -> None:
    """'sigkill_handler' names a function; 'Signals.SIGKILL' is the signal."""
    assert classify("[launch.py:315:sigkill_handler] cleaning up").cls == "not_oom"
    assert classify("died with <Signals.SIGKILL: 9>.").cls == "killed_unknown"


def test_a_segfault_is_a_crash_not_memory() -> None:
    """A segmentation fault is its own failure (crash_signal); a bus error in a DataLoader
    worker stays /dev/shm."""
    triage = classify("Fatal Python error: Segmentation fault\nSegmentation fault (core dumped)")
    assert (triage.cls, triage.family) == ("not_oom", "crash_signal")
    bus = "DataLoader worker (pid 12) exited unexpectedly\nBus error (core dumped)"
    assert classify(bus).cls == "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        '4f1c2a3b9d0e   trainer:latest   "python train.py"   Exited (0) 5 minutes ago\n',
        '4f1c2a3b9d0e   trainer:latest   "python train.py"   Exited (1) 5 minutes ago\n',
        "+[05:25:15] rc=1\n",
        "rc=1370 bytes copied\n",
        "=   EXIT CODE: 139\n",
        "the process exit code: 9 means a usage error here\n",
    ],
)
def test_other_exit_statuses_are_not_read_as_sigkill(text: str) -> None:
    assert classify(text).cls == "not_oom"


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


def test_a_memory_threshold_without_a_kill_is_not_host_memory() -> None:
    text = "INFO memory_monitor.py:120 -- memory usage is below the memory usage threshold\n"
    assert classify(text).cls == "not_oom"


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


@pytest.mark.parametrize(
    "text",
    [
        "2024-05-04T18:05:45Z container die 29d72966e0beb17d9b0b9fbc (exitCode=1)\n",
        "  Warning  EvictionThresholdMet  2m  kubelet  Attempting to reclaim ephemeral-storage\n",
        "eviction manager: thresholds - threshold [signal=nodefs.available, quantity=10%] met\n",
    ],
)
def test_other_container_events_and_disk_evictions_are_not_host_memory(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


def test_a_bare_disk_full_over_a_save_traceback_is_not_shared_memory() -> None:
    text = (
        'No space left on device\n\nTraceback (most recent call last):\n  File "train.py", '
        "line 210, in save\n    torch.save(state, path)\n"
    )
    assert classify(text).cls == "not_oom"


def test_a_killed_process_line_without_the_oom_killers_figures_is_not_host_memory() -> None:
    assert classify("supervisor: Killed process 42 (worker) after the deploy\n").cls != (
        "host_oom_killed"
    )


def test_a_scheduler_saying_a_node_lacks_gpu_memory_is_not_an_out_of_memory() -> None:
    text = (
        "Warning  FailedScheduling  default-scheduler  0/3 nodes are available: 3 Insufficient "
        "GPU Memory in one device.\n"
    )
    assert classify(text).cls == "not_oom"


def test_a_negative_size_cast_to_unsigned_on_macos_is_another_bug() -> None:
    text = "python(732) malloc: *** mach_vm_map(size=18446744071562067968) failed (error code=3)\n"
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        ("pid:1 worker[app:44] exit with status 9\n", "killed_unknown"),
        ("pid:1 worker[app:44] exit with status 1\n", "not_oom"),
        ("=>> PBS: job killed: walltime 3610 exceeded limit 3600\n", "not_oom"),
    ],
)
def test_other_statuses_and_limits_are_not_memory(text: str, cls: str) -> None:
    assert classify(text).cls == cls
