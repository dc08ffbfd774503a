"""Limits that are not memory running out, though their messages say "out of memory": a
runtime's own heap, the kernel's or a database's fixed tables, an OOM killer that failed, an
application's configured cap, shared memory that cannot be used for another reason than its
size, the JVM's threads, pinned or locked memory, an allocation refused for its argument.
Each is `not_oom`, with advice of its own; they are read with the other failures of
not_memory (its NEGATIVE families, in this order). Patterns follow the bounds of *_families:
literals and bounded repeats.
"""

from __future__ import annotations

import re

from gpubot.knowledge.oom.scan import Family


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | flags)


_I = re.IGNORECASE

LIMITS: tuple[Family, ...] = (
    # A runtime's own heap cap (V8's), as the JVM's: not the container's or the GPU's memory.
    Family(
        "runtime_heap_limit",
        "not_oom",
        "high",
        _p(r"JavaScript heap out of memory|\bReached heap limit\b"),
    ),
    # Shared memory that failed for a reason other than space: an object opened (not written)
    # when descriptors ran out, a segment that was never there, a call a signal interrupted.
    Family(
        "shared_memory_not_full",
        "not_oom",
        "medium",
        _p(
            r"unable to open shared memory (?:obje\w{0,3}|region)\b"
            r"|attaching to shared memory segment[^\n]{0,200}?No such file or directory"
            # A key, region or segment that could not be made because the directory for it
            # (/dev/shm) is not there: shared memory missing, not full.
            r"|shared memory (?:key|region|segment|pool|object)\b[^\n]{0,300}?"
            r"(?:No such file or directory|\bENOENT\b)"
            r"|shared memory[^\n]{0,200}?Interrupted system call",
            _I,
        ),
    ),
    # PostgreSQL's lock table full ("out of shared memory", with its hint to raise
    # max_locks_per_transaction): a database setting, not memory that ran out.
    Family(
        "database_lock_table_full",
        "not_oom",
        "medium",
        _p(r"\bout of shared memory\b", _I),
        near=_p(r"max_(?:pred_)?locks_per_transaction|\bpg_dump\b|\bpg_restore\b", _I),
        span=6,
    ),
    # A userspace OOM killer that tried and could not kill anything: nothing was killed for
    # memory, whatever its candidate list says.
    Family(
        "oom_killer_failed",
        "not_oom",
        "medium",
        _p(r"\bFailed to kill any cgroups?\b|\bearlyoom\[\d{1,10}\]: kill failed\b", _I),
    ),
    # A System V segment larger than the kernel allows (SHMMAX) is refused as an invalid
    # argument: a setting to raise, not shared memory that ran out.
    Family(
        "shm_segment_over_kernel_limit",
        "not_oom",
        "medium",
        _p(
            r"\bexceeded (?:your|the) kernel's SHMMAX\b"
            r"|\bshmget\([^)\n]{0,80}\) failed: Invalid argument"
            r"|could not create shared memory segment: Invalid argument",
            _I,
        ),
    ),
    # A store refusing writes at its own configured memory cap (Redis's maxmemory, memcached's
    # item memory): the process is alive and nothing was killed.
    Family(
        "application_memory_cap",
        "not_oom",
        "medium",
        _p(
            r"\bOOM command not allowed when used memory\b|SERVER_ERROR out of memory storing"
            # DuckDB at its memory_limit: "Out of Memory Error: failed to allocate data of size
            # 256.0 MiB (260.3 MiB/476.8 MiB used)".
            r"|\bOut of Memory Error: (?:failed to allocate|could not allocate) [^\n]{0,80}?"
            r"\([\d.]{1,12} ?[KMGT]i?B/[\d.]{1,12} ?[KMGT]i?B used\)"
            # ClickHouse's memory tracker refusing a query over its server or user limit.
            r"|\(MEMORY_LIMIT_EXCEEDED\)|\bmemory limit exceeded: would use\b"
            # DuckDB in memory with nowhere to spill: its buffer manager's own limit.
            r"|\bUnused blocks cannot be offloaded to disk\b"
            # ... a block refused under its memory_limit (the host's refusal says "(bad
            # allocation)"), or its limit not lowered: "could not allocate block of 262144
            # bytes", "Failed to change memory limit to 128000000".
            r"|\bOut of Memory Error: (?:could not|Failed to) allocate block of \d{1,20} bytes\b"
            r"(?! \(bad)"
            r"|\bOut of Memory Error: Failed to change memory limit to \d"
            r"|\bOut of Memory Error: failed to pin block of size \d"
            # ... or to spill one past its temp-directory limit.
            r"|\bfailed to offload data block of size\b"
            # DataFusion's memory pool (datafusion-cli -m): "Resources exhausted: Failed to
            # allocate additional 131072 bytes for ExternalSorterMerge[0] ... remain available
            # for the total pool".
            r"|\bremain available for the total pool\b"
            # An engine's Lua allocator at its own maximum: "{alloced,maximum}={N,M}bytes".
            r"|\[OOM\] synced=\d \{alloced,maximum\}="
            # Triton's CUDA memory pool, a size fixed at start, full and the request served
            # from pinned host memory instead: a warning, the card not out of memory.
            r"|\bCNMEM_STATUS_OUT_OF_MEMORY, falling back to pinned system memory\b"
            # ... and its pinned pool absent, the request served from ordinary host memory.
            r"|\bno pinned memory pool, falling back to non-pinned system memory\b"
            # Trino's cluster memory manager killing a query over the cluster's query memory
            # limits: the workers' JVMs are alive and nothing was killed by the kernel.
            r"|\bCLUSTER_OUT_OF_MEMORY\b|\bQuery killed because the cluster is out of memory\b"
            # MuJoCo's arena for a step, a fixed size set in the model: "mj_stackAlloc: out of
            # memory, stack overflow ... max = 16777216".
            r"|\bmj_stackAlloc: out of memory, stack overflow\b"
            # A runtime's cap on one allocation, named as what refused the request: "exceeds
            # chipStar's single-allocation cap of 4294959104 bytes".
            r"|\bexceed(?:s|ed)? [^\n]{0,40}?\bsingle[- ]allocation (?:cap|limit)\b"
        ),
    ),
    # gRPC's cap on one message's size (RESOURCE_EXHAUSTED, status 8): a channel option to
    # raise, not memory: "Sent message larger than max (544715979 vs. 536870912)".
    Family(
        "grpc_message_size",
        "not_oom",
        "high",
        _p(r"\b(?:Sent|Received) message larger than max \(\d{1,20} vs\.? \d{1,20}\)", _I),
    ),
    # Shared memory that could not be opened or made, for a reason other than space: /dev/shm
    # read-only or not writable by the user, System V's shmget refused by policy, a
    # descriptor limit, Chromium's sandbox refusing its temporary file.
    Family(
        "shm_not_usable",
        "not_oom",
        "medium",
        _p(
            r"\bshm_open failed : Permission denied\b"
            r"|/dev/shm: \[Errno 30\] Read-only file system\b"
            r"|\bshmget\([^)\n]{0,80}\)[^\n]{0,40}? failed: Operation not permitted\b"
            r"|\bshm_attach\(\): failed for key \w{1,20}: Too many open files\b"
            r"|\bCreating shared memory in \S{1,200} failed: No such process\b"
            # Open MPI's shared-memory transport giving up on its segment (a warning; the job
            # goes on over another transport).
            r"|\bunable to create shared memory BTL coordinating structure\b",
            _I,
        ),
    ),
    # The JVM refused a thread (a per-user process limit, a container's pids limit), which
    # Java reports as an OutOfMemoryError and Bazel as running out of memory: "unable to
    # create new native thread".
    Family(
        "thread_limit",
        "not_oom",
        "medium",
        _p(r"\bunable to create (?:a )?new native thread\b", _I),
    ),
    # XLA's pinned (page-locked) host memory refused, then tried again smaller: a limit on
    # locked memory (WSL, a container's ulimit -l), not the card's memory nor a kill.
    Family(
        "pinned_host_memory",
        "not_oom",
        "medium",
        _p(
            r"\bcould not allocate pinned host memory\b|\bbytes on host: CUDA_ERROR_\w{1,40}"
            # cudaMallocHost and cudaHostAlloc: page-locked host memory, named in the failure.
            r"|\bReturn value 2 from '(?:cudaMallocHost|cudaHostAlloc)\("
            # CuPy's PerformanceWarning: the staging buffer fell back to a synchronous copy.
            r"|\bUsing synchronous transfer as pinned memory\b"
        ),
    ),
    # The locked-memory limit (ulimit -l) refusing mlock: a setting to raise, and the
    # process runs on ("Unable to lock JVM Memory: error=12 ... Increase RLIMIT_MEMLOCK").
    Family(
        "locked_memory_limit",
        "not_oom",
        "medium",
        _p(r"\bRLIMIT_MEMLOCK\b|\bUnable to lock JVM Memory\b|\bmlockall\b[^\n]{0,80}?failed", _I),
    ),
    # An allocation refused as an invalid argument (EINVAL) is a wrong call, not a shortage.
    Family(
        "allocation_invalid_argument",
        "not_oom",
        "medium",
        _p(r"failed to allocate [^\n]{0,120}?: invalid argument", _I),
    ),
    # ... or with CUDA's invalid-argument error on the line before or after (a 3D array past
    # the texture size limit): "CUDA error 11: invalid argument" / "Failed to allocate ...".
    Family(
        "allocation_invalid_argument",
        "not_oom",
        "medium",
        _p(r"\bfailed to allocate\b", _I),
        near=_p(r"\bCUDA error 11: invalid argument\b|\bcudaErrorInvalidValue\b", _I),
        span=1,
    ),
    # An out-of-memory its reporter shows to be false, the device's memory free beside it:
    # "fails with a false `OutOfMemoryError` - even though the GPU reports 11.33 GiB free".
    # A runtime or driver defect (device selection, a version's regression), not exhaustion.
    Family(
        "false_oom_report",
        "not_oom",
        "medium",
        _p(r"\b(?:false|spurious|bogus)\W{0,2}(?:OutOfMemoryError|OOM|out[- ]of[- ]memory)\b", _I),
        near=_p(
            r"\b\d{1,6}(?:\.\d{1,2})? ?[GM]i?B (?:free|available)\b"
            r"|\b(?:free|available)(?: memory)?:? \d{1,6}(?:\.\d{1,2})? ?[GM]i?B\b",
            _I,
        ),
        span=2,
    ),
)
