"""Families of evidence: the many wordings of one failure, each with its class and confidence.

Every pattern is a bounded alternation of literals (no nested unbounded repeats), so a
megabyte-long line costs linear time; the scanning itself is in oom_scan.
"""

from __future__ import annotations

import re

from gpubot.domain.oom_scan import Family


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | flags)


_I = re.IGNORECASE

GPU_OOM: tuple[Family, ...] = (
    Family(
        "pytorch_cuda_oom",
        "cuda_oom",
        "high",
        _p(r"(?:CUDA|HIP|XPU|MPS backend) out of memory|torch(?:\.cuda)?\.OutOfMemoryError"),
    ),
    # The allocator's tail without its head: "Tried to allocate 2.00 MiB (GPU 0; 7.93 GiB
    # total capacity; ..." or "... GPU 0 has a total capacity of ...".
    Family(
        "pytorch_allocator_tail",
        "cuda_oom",
        "medium",
        _p(r"Tried to allocate \d[\d.]{0,20} ?\w{1,5}[ .]{1,3}\(?GPU \d{1,3}(?:; | has a total)"),
    ),
    Family(
        "cuda_runtime_oom",
        "cuda_oom",
        "high",
        _p(
            r"CUDA error: out of memory|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY"
            r"|cuda runtime error \(2\) : out of memory|cudaMalloc(?:Async)? failed"
            r"|cuMemAlloc(?:Async)? failed|CUDA driver error: out of memory"
        ),
    ),
    Family(
        "cudnn_cublas_alloc_failed",
        "cuda_oom",
        "high",
        _p(r"CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED|CUSOLVER_STATUS_ALLOC_FAILED"),
    ),
    Family(
        "xla_resource_exhausted",
        "cuda_oom",
        "high",
        _p(
            r"(?:RESOURCE_EXHAUSTED|Resource exhausted):?\s{0,4}(?:\S{1,80}\s{1,4}){0,3}?"
            r"(?:Out of memory|Failed to allocate|failed to allocate|allocat\w{0,6} \d)",
        ),
        wraps=True,
    ),
    Family(
        "tf_resource_exhausted",
        "cuda_oom",
        "high",
        _p(
            r"OOM when allocating tensor"
            r"|ResourceExhaustedError\b.{0,200}?(?:failed to allocate memory|out of memory)"
            r"|failed to allocate memory \[Op:"
            r"|ran out of memory trying to allocate",
            _I,
        ),
        wraps=True,
        # The BFC allocator's own warning that a fallback was taken is not a failure.
        unless=_p(r"caller indicates that this is not a failure"),
    ),
    Family(
        "nccl_cuda_oom",
        "cuda_oom",
        "high",
        _p(r"Cuda failure \d{0,4} ?'?out of memory|Failed to CUDA (?:c|m)alloc", _I),
    ),
    Family(
        "inference_kv_cache",
        "cuda_oom",
        "high",
        _p(
            r"No available memory for the cache blocks"
            r"|larger than the maximum number of tokens that can be stored in KV cache"
            r"|is larger than the available KV cache memory"
            r"|on startup is less than desired GPU memory utilization"
            r"|Free memory on device \S{0,40}.{0,40}less than desired GPU memory"
            r"|Not enough memory\. Please try to increase --mem-fraction-static"
        ),
        wraps=True,
    ),
    Family(
        "accelerate_batch_search",
        "cuda_oom",
        "medium",
        _p(r"No executable batch size found, reached zero"),
    ),
    # Last resort for GPU wording not known above: "out of memory" said of a device.
    Family(
        "gpu_out_of_memory_generic",
        "cuda_oom",
        "medium",
        _p(
            r"(?:\bGPU\b|\bCUDA\b|\bcuda\b|cudaMalloc|device memory)[^\n]{0,80}?out of memory"
            r"|out of (?:GPU|device|video) memory",
            _I,
        ),
        unless=_p(r"Java heap|OutOfMemoryError: (?:Java|GC|Metaspace)|Killed process", _I),
    ),
)

_MULTIPROCESSING = _p(
    r"SemLock|multiprocessing|joblib|/dev/shm|\btorch_\d|shared[ _]?memory|ctx\.Lock|\bshm\b",
    _I,
)

SHM: tuple[Family, ...] = (
    Family(
        "dataloader_bus_error",
        "shm_exhausted",
        "high",
        _p(
            r"insufficient shared memory|out of shared memory"
            r"|killed by signal: Bus error|raise your shared memory limit"
            r"|(?:increase|raise) (?:the |your )?(?:shm|shared memory)[- ]size",
            _I,
        ),
    ),
    Family(
        "torch_shm_write",
        "shm_exhausted",
        "high",
        _p(
            r"unable to write to file </?torch_"
            r"|</?torch_\w{1,40}>[^\n]{0,80}No space left on device"
        ),
    ),
    Family(
        "nccl_shm_segment",
        "shm_exhausted",
        "high",
        _p(
            r"failed to extend /dev/shm|Error while creating shared memory segment"
            r"|unable to allocate shared memory|NCCL_SHM_DISABLE"
        ),
    ),
    Family(
        "dev_shm_full",
        "shm_exhausted",
        "high",
        _p(r"/dev/shm\S{0,200}[^\n]{0,200}No space left on device"),  # noqa: S108 (a pattern)
    ),
    # ENOSPC from a semaphore or shared array: multiprocessing keeps those in /dev/shm.
    Family(
        "semlock_enospc",
        "shm_exhausted",
        "medium",
        _p(r"\[Errno 28\] No space left on device|No space left on device \(28\)"),
        near=_MULTIPROCESSING,
        span=8,
    ),
    Family(
        "bus_error_with_workers",
        "shm_exhausted",
        "medium",
        _p(r"\bBus error\b", _I),
        near=_p(r"DataLoader|dataloader|num_workers|shared memory|/dev/shm|shm-size", _I),
        span=6,
    ),
)

HOST: tuple[Family, ...] = (
    Family(
        "kernel_oom_killer",
        "host_oom_killed",
        "high",
        _p(
            r"Out of memory: Kill(?:ed)? process|Memory cgroup out of memory"
            r"|\boom-kill:|invoked oom-killer|oom_reaper: reaped|oom_kill_process"
            r"|Detected \d{1,6} oom[-_]kill event"  # Slurm's cgroup plugin
            r"|killed by the OOM killer|has been OOM[- ]Killed"
            r"|killed as a result of limit of|Out of memory and no killable processes"
            r"|System OOM encountered|\bSystemOOM\b",  # cgroup v1: "Task in /kubepods... killed as"
            _I,
        ),
    ),
    Family(
        "kubelet_oomkilled",
        "host_oom_killed",
        "high",
        # Not `OOMKilled: false`, which docker inspect prints for every other exit.
        _p(r"\b(?:OOMKill(?:ed|ing)|OOM Killed)\b(?!\"?\s{0,3}[:=]?\s{0,3}\"?(?:false|False)\b)"),
    ),
    Family(
        "kubelet_memory_eviction",
        "host_oom_killed",
        "high",
        _p(
            r"low on resource: memory|had condition: \[MemoryPressure\]"
            r"|evicted due to (?:node )?memory pressure",
            _I,
        ),
    ),
    Family(
        "ray_memory_monitor",
        "host_oom_killed",
        "high",
        _p(
            r"killed due to memory pressure \(OOM\)|killed due to the node running low on memory"
            r"|ray\.exceptions\.OutOfMemoryError"
            r"|killing latest task[^\n]{0,200}to avoid running out of memory"
        ),
    ),
    Family(
        "dask_memory_budget",
        "host_oom_killed",
        "high",
        _p(r"exceeded \d{1,3}% memory budget|memory budget\. Restarting"),
    ),
    Family(
        "batch_scheduler_memory_kill",
        "host_oom_killed",
        "medium",
        _p(
            r"task \d{1,6}: Out Of Memory|exceeded (?:job |its )?memory limit"
            r"|running beyond physical memory limits|Container killed due to memory usage"
            r"|killed by YARN for exceeding (?:physical )?memory limits",
            _I,
        ),
    ),
)

LIVENESS = Family(
    "liveness_probe_kill",
    "not_oom",
    "high",
    _p(r"Liveness probe failed|failed liveness probe", _I),
)

# Someone asked for the stop: a kill with a known cause that is not memory.
STOP_REQUESTED = Family(
    "stop_requested",
    "not_oom",
    "medium",
    _p(
        r"supervisorctl (?:restart|stop)|docker(?:-compose| compose)? (?:stop|kill|restart)\b"
        r"|kubectl delete pod|\bPreempt(?:ed|ing)\b|preempted by|Stopping container"
        r"|scale(?:d)? down|spot instance interruption|TerminationGracePeriod"
        r"|imminent node shutdown|NodeShutdown|DeadlineExceeded|longer than the specified deadline"
        r"|DUE TO (?:TIME LIMIT|PREEMPTION)",
        _I,
    ),
)

SIGKILL = Family(
    "sigkill_cause_unknown",
    "killed_unknown",
    "medium",
    _p(
        r"(?:exit|status|return|error)[ _]?(?:code|status)[:=]?\s{0,12}-?(?:137|-9)\b"
        r"|exitcode\s{0,3}:\s{0,3}-9\b|(?:exited|returned) with (?:code|status) 137\b"
        r"|non-zero exit status 137\b|\bsignal: killed\b|SIGKILL|Signals\.SIGKILL"
        r"|killed by signal: Killed|received signal 9\b|\bsignal 9\b|\bKilled: 9\b"
        r"|(?:code|status)\"?\s{0,2}[:=]?\s{0,2}\"?(?:137|-9)\b|\bError 137\b"
        r"|exited (?:with )?(?:code )?137\b|\d{1,10}\s{1,12}Killed\s{0,4}$"
        r"|^\s{0,8}Killed\s{0,4}$"  # the shell's job report
        r"|\d{1,10}\s{1,12}Killed\s{1,20}\S"  # "line 18:    36 Killed     python3 ..."
        r"|\bKilled\s{1,4}python",
        _I | re.MULTILINE,
    ),
)

# Look like a memory failure (or sit where one would), are not one: each gets its own advice.
NEGATIVE: tuple[Family, ...] = (
    Family(
        "device_side_assert",
        "not_oom",
        "high",
        _p(r"device-side assert(?:ion)? triggered|Assertion `[^`\n]{0,200}` failed", _I),
    ),
    Family(
        "illegal_memory_access",
        "not_oom",
        "high",
        _p(
            r"illegal memory access|cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS"
            r"|misaligned address|illegal instruction was encountered",
            _I,
        ),
    ),
    Family(
        "nccl_timeout",
        "not_oom",
        "high",
        _p(
            r"Watchdog caught collective operation timeout|collective operation timeout"
            r"|NCCL (?:communicator was aborted|timeout)|ncclRemoteError|ncclSystemError"
            r"|NCCL error|ProcessGroupNCCL|DistBackendError|ncclUnhandledCudaError"
            r"|unhandled cuda error|unhandled system error",
            _I,
        ),
    ),
    Family(
        "driver_mismatch",
        "not_oom",
        "high",
        _p(
            r"driver version is insufficient|CUDA_ERROR_NO_DEVICE|no CUDA-capable device"
            r"|NVIDIA driver on your system is too old|Driver/library version mismatch"
            r"|found no NVIDIA driver|CUDA driver version is insufficient"
            r"|forward compatibility was attempted",
            _I,
        ),
    ),
    Family(
        "gpu_xid",
        "not_oom",
        "high",
        _p(
            r"NVRM: Xid|\bXid \(PCI:|\bXID \d{1,3}\b|fallen off the bus|GPU_IS_LOST|GPU is lost", _I
        ),
    ),
    Family(
        "java_heap",
        "not_oom",
        "high",
        _p(r"java\.lang\.OutOfMemoryError|Java heap space|GC overhead limit exceeded"),
    ),
    Family("disk_full", "not_oom", "high", _p(r"No space left on device|ENOSPC|disk quota", _I)),
    Family(
        "ephemeral_storage_eviction",
        "not_oom",
        "high",
        _p(
            r"low on resource: (?:ephemeral-storage|nodefs|imagefs)|DiskPressure"
            r"|ephemeral local storage usage exceeds|exceeded its local ephemeral storage",
            _I,
        ),
    ),
    Family(
        "image_pull",
        "not_oom",
        "high",
        _p(r"ImagePullBackOff|ErrImagePull|Back-off pulling image"),
    ),
    Family(
        "terminated_on_request",
        "not_oom",
        "medium",
        _p(
            r"\bsignal 15\b|\bSIGTERM\b|imminent node shutdown|\bPreempt(?:ed|ing)\b"
            r"|DeadlineExceeded|longer than the specified deadline",
            _I,
        ),
    ),
    Family(
        "cuda_launch_failure",
        "not_oom",
        "medium",
        _p(
            r"unspecified launch failure|cudaErrorLaunchFailure|CUBLAS_STATUS_\w{1,40}"
            r"|CUDNN_STATUS_\w{1,40}|CUDA error: \w",
        ),
    ),
)
