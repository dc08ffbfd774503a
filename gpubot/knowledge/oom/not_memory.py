"""Families of evidence that a failure is not a memory failure, or not known to be one.

Kills with a cause of their own (a liveness probe, a stop someone asked for, an eviction for
disk) and failures that only look like memory; a SIGKILL whose cause the log does not give is
in kills.
Patterns follow the same bounds as *_families: no nested unbounded repeats.
"""

from __future__ import annotations

import re

from gpubot.knowledge.oom.not_memory_limits import LIMITS
from gpubot.knowledge.oom.scan import Family


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | flags)


_I = re.IGNORECASE

# A size asked of a host allocator that no machine holds: a negative size, or one cast from
# it to unsigned, or a shape gone wrong. Another bug's symptom, whatever the words around it
# say; the host-memory families do not count a refusal with one of these beside it.
ABSURD_SIZE = (
    r"\b(?:allocate|allocating) -\d{1,20} bytes\b"
    r"|\byou tried to allocate \d{14,20} bytes\b"  # ten terabytes and more
    r"|\bTrying to allocate: \d{14,20}B\b"  # Unity
    r"|\b[Ff]ailed to allocate \d{17,20} bytes\b"  # a hundred petabytes and more
    r"|\bmemory allocation of \d{17,20} bytes failed\b"  # Rust's global allocator, the same
    r"|\b(?:malloc|realloc|allocation) of size \d{16,20} failed\b"  # Arrow: a petabyte and more
    # PyTorch's request told in a title: "trying to allocate 133792483MiB" (a terabyte and more).
    r"|\b[Tt]rying to allocate \d{7,12} ?MiB\b"
    # ... or in petabytes and exabytes: "CUDA OOM while saving model (trying to allocate 1EB
    # memory)".
    r"|\b[Tt]rying to allocate \d{1,6}(?:\.\d{1,3})? ?(?:PB|PiB|EB|EiB)\b"
    r"|\(-4:Insufficient memory\) Failed to allocate \d{14,20} bytes\b"  # OpenCV: 10 TB and more
    r"|\bUnable to allocate (?:[1-9]\d{1,5}(?:\.\d{1,3})? TiB|[\d.]{1,9} (?:PiB|EiB))"  # numpy
    # macOS malloc: "mach_vm_map(size=96180599144448, flags: 100) failed".
    r"|mach_vm_map\(size=\d{14,20}(?:, flags: \d{1,10})?\) failed"
    # A size within a few gigabytes of 2^64 (a negative size cast to unsigned), named
    # anywhere: "n_bytes_to_allocate) is 18446744056429019136".
    r"|(?:bytes\w{0,20}|\bsize)\)?\s{0,2}(?:is|=|:|of)\s{0,2}184467440\d{11}\b"
    # Qiskit Aer's check before a run: "Required memory: 274877906944M" (a petabyte and more).
    r"|\bRequired memory: \d{10,20}M\b"
)

LIVENESS = Family(
    "liveness_probe_kill",
    "not_oom",
    "high",
    _p(
        r"Liveness probe (?:failed|fails|failing|keeps failing)|failed liveness probe"
        # A startup probe that fails its threshold has the kubelet kill the container too.
        r"|Startup probe failed|failed startup probe"
        # ... told: "We have defined the liveness probe ... after performing a restart of the
        # container ... status code 137".
        r"|\bliveness[ _-]?probe\W{0,2}\b[^\n]{0,240}?\b(?:restart\w{0,3}|kill(?:s|ed))\b",
        _I,
    ),
    # Not a probe set up to restart on something else said in passing ("add a liveness
    # probe to restart it if it hangs").
    unless=_p(r"\b(?:add|adding|set up|configure|should|could|if)\b[^\n]{0,30}?\bliveness", _I),
)

# Someone asked for the stop: a kill with a known cause that is not memory.
STOP_REQUESTED = Family(
    "stop_requested",
    "not_oom",
    "medium",
    _p(
        r"supervisorctl (?:restart|stop)|docker(?:-compose| compose)? (?:stop|kill|restart)\b"
        r"|\bsystemctl (?:stop|restart|kill)\b"
        # A program that sends SIGKILL to itself: "tests sigkilling themselves".
        r"|\bsigkill(?:ing|ed|s)? (?:themselves|itself)\b"
        r"|kubectl delete pod|\bPreempt(?:ed|ing)\b|preempted by|Stopping container"
        r"|scale(?:d)? down|spot instance interruption|TerminationGracePeriod"
        r"|imminent node shutdown|NodeShutdown|DeadlineExceeded|longer than the specified deadline"
        r"|DUE TO (?:TIME LIMIT|PREEMPTION)"
        # gunicorn's master killing a worker that missed its timeout; uWSGI's for a request
        # over its harakiri timeout, or for a worker slow to stop on a reload ("NO MERCY").
        r"|\bWORKER TIMEOUT \(pid:\d{1,10}\)|\bHARAKIRI ON WORKER\b"
        r"|\bis taking too much time to die\b"
        # A CI runner told to stop (its service stopped, the job cancelled).
        r"|\bThe runner has received a shutdown signal\b"
        # Swarm killing a task its health check found unhealthy; Nomad stopping a task it
        # was told to stop (SIGTERM, then SIGKILL after the kill timeout).
        r"|\bdockerexec: unhealthy container\b"
        r"|\bSent interrupt\. Waiting \d{1,4}s before force killing\b"
        # A platform's time limit: Lambda's "Task timed out after 30.27 seconds", Heroku's
        # R10 (boot) and R12 (exit) timeouts, each followed by its SIGKILL.
        r"|\bTask timed out after \d{1,6}(?:\.\d{1,3})? seconds\b"
        r"|\bError R1[02] \((?:Boot|Exit) timeout\)"
        # Android 12's phantom process killer (more than 32 child processes, or too much CPU).
        r"|\bphantom\)? process(?:es)? (?:killer|greater than|limit)"
        # A supervisor's watchdog ending a job that stopped reporting (cryoSPARC's heartbeat).
        r"|\bkilled because a heartbeat was not received\b",
        _I,
    ),
    # Not a stop named as one suspect beside the OOM killer: "The two candidates are the OOM
    # killer and a Docker stop".
    unless=_p(r"\bcandidates?\b|\beither\b|\bOOM[- ]?killer\b", _I),
)

# An eviction for a resource other than memory: the kubelet's SIGKILL (exit code 137) has a
# known cause, and it is not memory.
NON_MEMORY_EVICTION = Family(
    "ephemeral_storage_eviction",
    "not_oom",
    "high",
    _p(
        r"low on resource: (?:ephemeral-storage|nodefs|imagefs|pids)"
        r"|\b(?:DiskPressure|PIDPressure)\b"
        r"|ephemeral local storage usage exceeds|exceeded its local ephemeral storage"
        # The kubelet evicting for an emptyDir volume over its sizeLimit.
        r"|Usage of EmptyDir volume \"[^\"\n]{1,200}\" exceeds the limit",
        _I,
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
            r"illegal (?:CUDA )?memory access|cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS"
            r"|misaligned address|illegal instruction was encountered"
            # The driver's code for it after a CUDA call's name: "cuEventRecord failed with
            # error 700" (PhysX), "cudaMemcpy returned error 700".
            r"|\bcu[A-Z]\w{2,40} (?:failed with|returned) error 700\b"
            # ... or its name before the call: "CUDA error: ILLEGAL_ADDRESS in cuMemAlloc(...)".
            r"|\bILLEGAL_ADDRESS in cu[A-Z]\w{2,40}\(",
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
            r"|forward compatibility was attempted|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"
            r"|unsupported display driver / cuda driver combination",
            _I,
        ),
    ),
    # Every GPU busy (exclusive-process mode, held by another process) or unavailable (a
    # driver going away): an allocation fails with it, but memory is not the cause.
    Family(
        "gpu_unavailable",
        "not_oom",
        "high",
        _p(
            r"CUDA-capable device\(s\) is/are busy or unavailable|\bcudaErrorDevicesUnavailable\b"
            r"|all CUDA-capable devices are busy or unavailable\b"
            r"|\bCUDA_ERROR_DEVICE_UNAVAILABLE\b",
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
    # A kernel's on-chip shared memory per block (Triton's autotuner), not /dev/shm nor VRAM.
    Family(
        "kernel_shared_memory_limit",
        "not_oom",
        "high",
        _p(
            r"out of resource: shared memory|OutOfResources: out of resource"
            # XLA:TPU compiling a kernel past the core's on-chip vector memory.
            r"|\bRan out of memory in memory space vmem\b"
            # XLA on ROCm past a block's LDS: "Shared memory size limit exceeded: requested
            # 73728, available: 65536".
            r"|\bShared memory size limit exceeded: requested \d{1,9}, available: \d{1,9}\b",
            _I,
        ),
    ),
    Family(
        "java_heap",
        "not_oom",
        "high",
        _p(
            r"java\.lang\.OutOfMemoryError|Java heap space|GC overhead limit exceeded"
            # The Dart VM's own heap ("Exhausted heap space, trying to allocate 240 bytes").
            r"|\bExhausted heap space, trying to allocate \d"
            # Netty's pool of direct buffers at the JVM's configured maximum.
            r"|\bOutOfDirectMemoryError\b"
        ),
    ),
    # ... by its short name, where the lines around are the JVM's: "suppresses all Throwables
    # including OutOfMemoryError and other java.lang.Error".
    Family(
        "java_heap",
        "not_oom",
        "medium",
        _p(r"(?<![\w.])OutOfMemoryErrors?\b"),
        near=_p(r"\bjava\.lang\.\w|\bJVM\b|\w\.java\b|\bThrowables?\b"),
        span=3,
    ),
    # A crash by signal: SIGSEGV or SIGABRT, as a launcher reports a child's negative status.
    Family(
        "crash_signal",
        "not_oom",
        "high",
        _p(
            # (Not joblib's stock list: "This could be caused by a segmentation fault ...".)
            r"(?<!caused by a )Segmentation fault|\bSIGSEGV\b|\bSIGABRT\b|\bSIGFPE\b|\bsignal 11\b"
            r"|(?:exit ?code|return code|exit status)\s{0,3}[:=]?\s{0,3}\(?-(?:11|6|8)\b"
            # 128 + the signal, as a container or a worker reports it: 139 (SIGSEGV), 136
            # (SIGFPE).
            r"|\bexit(?:ed)? with exit code (?:139|136)\b"
            r"|\"ExitCode\":\s{0,3}(?:139|136)\b"  # docker inspect
            r"|\b(?:status|exit) code (?:of )?(?:139|136)\b",
            _I,
        ),
        # One item of a list of what might have happened ("Some common causes include: ...
        # (3) the worker crashed unexpectedly due to SIGSEGV") is not a crash that did.
        unless=_p(
            r"\b(?:potential|possible|probable|common|likely) (?:root )?causes?\b"
            r"|\bcauses? include\b"
            # ... nor what a crash could do: "a segmentation fault can produce a core dump".
            r"|\b(?:can|could|may|might|would) (?:produce|cause|leave|trigger|lead to|result in)\b",
            _I,
        ),
    ),
    *LIMITS,
    Family("absurd_request", "not_oom", "high", _p(ABSURD_SIZE, _I)),
    Family("disk_full", "not_oom", "high", _p(r"No space left on device|ENOSPC|disk quota", _I)),
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
        # torchrun's agent sending SIGTERM to the other workers after one of them failed:
        # nobody asked for that stop, the failed worker's end is the cause.
        unless=_p(r"\bSending process \d{1,10} closing signal SIGTERM\b"),
    ),
    Family(
        "cuda_launch_failure",
        "not_oom",
        "medium",
        _p(
            r"unspecified launch failure|cudaErrorLaunchFailure|CUBLAS_STATUS_\w{1,40}"
            r"|too many resources requested for launch|cudaErrorLaunchOutOfResources"
            r"|CUDNN_STATUS_\w{1,40}|CUDA error: \w",
        ),
        # An error CUDA could not name is not known to be a launch failure: a GPU-sharing
        # layer's refused allocation reaches the framework as one, for instance.
        unless=_p(r"CUDA error: (?:unknown error|unrecognized error code)\b"),
    ),
    # Last, so that a failure named above wins over them. Notices about memory that report a
    # use, not a failure: TensorFlow's warning about a large allocation, its BFC allocator
    # taking a slower path, Dask pausing or warning about a worker's memory. A memory failure
    # or a kill anywhere in the log is read before these.
    Family(
        "memory_notice",
        "not_oom",
        "medium",
        _p(
            r"\bAllocation of \d{1,20} exceeds \d{1,3}% of (?:free )?system memory\b"
            r"|\bThe caller indicates that this is not a failure\b"
            # TensorRT's builder skipping a tactic whose workspace does not fit, and going on.
            r"|\bDevice memory is insufficient to use tactic\b"
            r"|Skipping tactic (?:0x)?[0-9a-f]{1,20} due to insuf{1,2}icient memory\b"
            r"|\bPausing worker\b|\bUnmanaged memory use is high\b"
            r"|\bMemory use is high but worker has no data to store to disk\b",
            _I,
        ),
    ),
    # The GPU's device nodes could not be opened (Jetson's nvrm channel, refused to a user
    # outside the video group): an ENOMEM the buffer library reports after it is no memory.
    Family(
        "device_access_denied",
        "not_oom",
        "medium",
        _p(r"\bCan't initialize nvrm channel\b"),
    ),
    # ROCm's runtime failing to start on a GPU it does not support: rocminfo's
    # "HSA_STATUS_ERROR_OUT_OF_RESOURCES" names its own resources, not exhausted memory.
    Family(
        "device_access_denied",
        "not_oom",
        "medium",
        _p(r"\bHSA_STATUS_ERROR_OUT_OF_RESOURCES\b"),
        near=_p(r"\brocminfo\b|\bnot supported by ROCm\b", re.IGNORECASE),
        span=3,
    ),
    # A scheduler that found nowhere to run the work (too little unrequested memory, CPU or
    # GPU on every node): nothing started, so nothing ran out of memory.
    Family(
        "scheduling_failed",
        "not_oom",
        "medium",
        _p(
            r"\bFailedScheduling\b|\b\d{1,6}/\d{1,6} nodes are available:"
            r"|\bNo nodes are available that match all of the\b"
            r"|\bMemory specification can not be satisfied\b"
            r"|\bRequested node configuration is not available\b",
        ),
    ),
    # A pod or job refused before it ran: the kubelet's device manager could not allocate a
    # device at admission (lost, unhealthy, none free), a quota or an admission webhook
    # refused the pod's resource fields, a batch scheduler refused the submission.
    Family(
        "admission_refused",
        "not_oom",
        "medium",
        _p(
            r"\bUnexpectedAdmissionError\b|\bAllocate failed due to\b"
            r"|\bis forbidden: (?:exceeded|failed) quota\b"
            r"|\badmission webhook \"[^\"\n]{1,200}\" denied the request\b"
            r"|\bqsub: submit error\b|\bBatch job submission failed\b"
            # The kubelet refusing a pod at admission, as `kubectl get pods` shows it: status
            # "OutOfmemory" (or OutOfcpu, OutOfnvidia.com/gpu) in the STATUS column.
            r"|\s0/\d{1,3}\s{1,12}OutOf(?:memory|cpu|pods|[\w.-]{1,40}/[\w.-]{1,40})\s{1,12}\d",
        ),
    ),
    # A bus error where the host's hugepages are named: PostgreSQL's initdb and other
    # programs that map huge pages get SIGBUS when the container may not use them.
    Family(
        "hugepages_bus_error",
        "not_oom",
        "medium",
        _p(r"\bBus error\b", _I),
        near=_p(r"\bhuge ?pages?\b|\bhugetlb", _I),
        span=8,
    ),
    # A bus error beside df showing the root filesystem full: a file mapped from a full
    # disk faults on its first write.
    Family(
        "bus_error_disk_full",
        "not_oom",
        "medium",
        _p(r"\bBus error\b", _I),
        near=_p(r"\s100%\s{1,4}/\s*$"),
        span=15,
    ),
)

# Words about memory running short that no family above explained: the verdict is then that
# the log cannot tell, never a confident "not an OOM".
MEMORY_WORDS = Family(
    "memory_words_unexplained",
    "cannot_tell",
    "low",
    _p(
        r"out of memory|(?-i:\bOOM\b)|OutOfMemory|\bmemory (?:limit|pressure|exhausted)\b"
        r"|\binsufficient (?:shared )?memory\b|\bnot enough memory\b|\bcan(?:no|')t allocate\b"
        r"|\b(?:fail(?:ed|s)?|unable) to allocate\b|\ballocation failed\b|\bENOMEM\b"
        r"|\boom[-_ ]?kill|\bRESOURCE_EXHAUSTED\b"
        # Shared memory is named in ordinary lines too: only with a failure beside it.
        r"|(?:/dev/shm|\bshared memory\b)[^\n]{0,120}?\b(?:fail\w{0,4}|error|unable|"
        r"insufficient|exceed\w{0,2}|no space|too small)\b"
        r"|\b(?:fail\w{0,4}|error|unable|insufficient)\b[^\n]{0,120}?(?:/dev/shm|shared memory\b)",
        _I,
    ),
    # Advice about what to do if memory runs out says nothing about this run.
    unless=_p(
        r"\b(?:if|when|in case) (?:you (?:encounter|get|see|hit|run into|face|meet|have)|OOM "
        r"happens)\b|\bto avoid fragmentation\b",
        _I,
    ),
)
