"""Families added after the second blind part: each reads its wording (synthetic lines in the
families' own words), and a lookalike that must not be read as it."""

from __future__ import annotations

from gpubot.domain.oom import classify

RAY_OLD_MONITOR = """Traceback (most recent call last):
  File "/opt/ray/python/ray/worker.py", line 830, in _process_task
    self.memory_monitor.raise_if_low_memory()
ray.memory_monitor.RayOutOfMemoryError: More than 95% of the memory on node
worker-3 is used (60.1 / 62.8 GB). The top 10 memory consumers are:
"""

TF1_OOM_REPORT = """ResourceExhaustedError (see above for traceback): OOM when running the step
Current usage from device: /job:localhost/replica:0/task:0/device:GPU:0, allocator: GPU_0_bfc
  1.20GiB from conv5/Conv2D
"""

SEMLOCK_ERROR_FIRST = """OSError: [Errno 28] No space left on device
  File "worker.py", line 40, in main
    pool = Pool(8)
  File "/usr/lib/python3.10/multiprocessing/pool.py", line 215, in __init__
    self._setup_queues()
  File "/usr/lib/python3.10/multiprocessing/pool.py", line 341, in _setup_queues
    self._inqueue = self._ctx.SimpleQueue()
  File "/usr/lib/python3.10/multiprocessing/context.py", line 113, in SimpleQueue
    return SimpleQueue(ctx=self.get_context())
  File "/usr/lib/python3.10/multiprocessing/queues.py", line 341, in __init__
    self._rlock = ctx.Lock()
  File "/usr/lib/python3.10/multiprocessing/synchronize.py", line 57, in __init__
    sl = self._semlock = _multiprocessing.SemLock(
"""

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


def test_rays_old_memory_monitor_is_host_memory() -> None:
    """Ray 1.x's RayOutOfMemoryError ('More than 95% of the memory on node') is host memory."""
    triage = classify(RAY_OLD_MONITOR)
    assert (triage.cls, triage.family) == ("host_oom_killed", "ray_memory_monitor")


def test_ray_memory_settings_or_a_full_disk_are_not_its_monitor() -> None:
    """Ray's advice about its monitor's settings, or a disk 95 % full, is no memory kill."""
    advice = "To disable worker killing, set the environment variable RAY_memory_monitor_refresh_ms"
    assert classify(advice).cls == "not_oom"
    assert classify("More than 95% of the disk on node worker-3 is used").cls == "not_oom"


def test_tf1_resource_exhausted_oom_without_when_allocating_is_gpu_memory() -> None:
    """TF1's 'ResourceExhaustedError (see above for traceback): OOM' and the tensors the GPU's
    BFC allocator lists ('Current usage from device: ... GPU_0_bfc') are GPU memory."""
    triage = classify(TF1_OOM_REPORT)
    assert (triage.cls, triage.family) == ("cuda_oom", "tf_resource_exhausted")
    usage_only = TF1_OOM_REPORT.splitlines()[1]
    assert classify(usage_only).cls == "cuda_oom"


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


def test_semlock_enospc_printed_before_its_frames_is_shared_memory() -> None:
    """ENOSPC printed before a traceback that goes through multiprocessing's SemLock, more
    than a few lines away, is /dev/shm: the whole traceback around the error counts."""
    triage = classify(SEMLOCK_ERROR_FIRST)
    assert (triage.cls, triage.family) == ("shm_exhausted", "semlock_enospc")


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


def test_launcher_teardown_after_a_sigkill_or_alone_stays_unknown() -> None:
    """A worker that itself exited with -9, or a teardown with no status given, is still a
    SIGKILL whose cause the log does not give."""
    assert classify(_launcher("-9")).cls == "killed_unknown"
    alone = _launcher("-9").splitlines()[0]
    assert classify(alone).cls == "killed_unknown"


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
