"""Shared memory exhausted: the tmpfs at /dev/shm full, as DataLoader workers,
multiprocessing's semaphores, NCCL's segments and the programs that map it report it, each
family with its class and confidence.

Every pattern is a bounded alternation of literals (no nested unbounded repeats), so a
megabyte-long line costs linear time; the scanning itself is in gpubot.knowledge.oom.scan.
"""

from __future__ import annotations

import re

from gpubot.knowledge.oom.reported import REPORTED_SHM
from gpubot.knowledge.oom.scan import Family
from gpubot.knowledge.oom.shm_told import SHM_TOLD
from gpubot.knowledge.oom.stacks import STACK_SHM


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | flags)


_I = re.IGNORECASE
# ENOSPC in its wordings, and one whose message names a path outside shared memory.
_ENOSPC = r"No space left on device|\bENOSPC\b|\[Errno 28\]"
# ... or a runtime failing to mount a fresh /dev/shm into a container: ENOSPC from mount(2)
# is the host's mount limit (a leak of mounts), not a full tmpfs.
_ENOSPC_OUTSIDE_SHM = (
    r"No space left on device\W{1,4}/(?!dev/shm|run/shm)"
    r"|\bmounting \W{0,6}/(?:dev|run)/shm\W{0,6} to rootfs\b"
)

# Shared memory's tmpfs: /dev/shm, or /run/shm where /dev/shm links to it.
_SHM_DIR = r"/(?:dev|run)/shm"
_MULTIPROCESSING = _p(
    r"SemLock|multiprocessing|joblib|/dev/shm|\btorch_\d|shared[ _]?memory|ctx\.Lock|\bshm\b",
    _I,
)

SHM: tuple[Family, ...] = (
    *REPORTED_SHM,
    *STACK_SHM,
    # zenoh's shared-memory provider (ROS 2's rmw_zenoh) unable to make its POSIX segment for
    # want of memory or space: "Unable to create POSIX shm segment: OS error 12".
    Family(
        "shm_pool_enospc",
        "shm_exhausted",
        "medium",
        _p(r"\bUnable to create POSIX shm segment: OS error (?:12|28)\b"),
    ),
    # Paddle's DataLoader worker unable to map its shared-memory segment: "Memory map failed
    # when create shared memory" (its mmap_allocator, in /dev/shm).
    Family(
        "paddle_shm_mmap_failed",
        "shm_exhausted",
        "medium",
        _p(r"\bMemory map failed when create shared memory\b"),
    ),
    # The kubelet evicting for a memory-backed emptyDir mounted at /dev/shm (named for it:
    # dshm, shm, dev-shm) over its sizeLimit: /dev/shm filled, not the node's disk.
    Family(
        "emptydir_shm_over_limit",
        "shm_exhausted",
        "high",
        _p(
            r"Usage of EmptyDir volume \"[\w.-]{0,40}?shm[\w.-]{0,40}\" exceeds the limit",
            _I,
        ),
    ),
    Family(
        "dataloader_bus_error",
        "shm_exhausted",
        "high",
        _p(
            r"insufficient shared memory|out of shared memory|not enough shared memory"
            r"|\b(?:exhaust(?:ed|ing)|ran out of|running out of) (?:the )?shared memory\b"
            r"|\bfail(?:ed|ing|s)? to create (?:a |the )?shared memory segment\b"
            r"|\bexceeds the capacity of /dev/shm\b"  # Ray's object store
            r"|\s100%\s{1,4}/dev/shm\s*$"  # df's line for a full /dev/shm
            r"|killed by signal: Bus error|raise your shared memory limit"
            r"|(?:increase|raise) (?:the |your )?(?:shm|shared memory)[- ]size",
            _I,
        ),
        # PostgreSQL's "out of shared memory" is its lock table full: its hint says so, and
        # pg_dump and pg_restore print it when they lock every table.
        # ... and a bus error beside df showing /dev/shm empty is not /dev/shm full.
        unless_near=_p(
            r"max_(?:pred_)?locks_per_transaction|\bpg_dump\b|\bpg_restore\b"
            r"|\b\d{1,5}(?:\.\d{1,2})?[GT]\s{1,12}0\s{1,12}\d{1,5}(?:\.\d{1,2})?[GT]\s{1,4}0%\s{1,4}/dev/shm\s*$",
            _I,
        ),
        unless_span=12,
    ),
    Family(
        "torch_shm_write",
        "shm_exhausted",
        "high",
        _p(
            # The segment's name may come cut short ("</torch>.....").
            r"unable to write to file </?torch(?:_|>)"
            # ... quoted in a sentence without its angle brackets: "`/torch_Someid`".
            r"|unable to write to file [`'\"]?/torch_\w"
            # ENOSPC: /dev/shm is full. ENOMEM on the same object is memory (or mappings)
            # refused, which the host families read.
            r"|</?torch_\w{1,40}>[^\n]{0,80}No space left on device"
        ),
    ),
    Family(
        "nccl_shm_segment",
        "shm_exhausted",
        "high",
        # NCCL's shm transport names /dev/shm only in newer versions; older ones name their
        # source file (include/shm.h, misc/shmutils.cc) beside posix_fallocate's ENOSPC.
        _p(
            r"failed to extend /dev/shm|Error while creating shared memory segment"
            r"|unable to allocate shared memory|NCCL_SHM_DISABLE"
            r"|NCCL WARN Call to posix_fallocate failed"
            # NCCL's own segment name, when the message is wrapped before it.
            r"|/dev/shm/nccl-\S{1,40} \(size \d{1,20}\), error: No space\b"
            r"|(?:shm\.h|shmutils\.cc|shm\.cc):\d{1,5} NCCL WARN [^\n]{0,120}?"
            r"(?:No space left on device|posix_fallocate|failed to extend|Unable to allocate)"
        ),
        # ... not when shm_open itself was refused: /dev/shm's permissions, not its size.
        unless_near=_p(r"\bshm_open failed : Permission denied\b"),
        unless_span=3,
    ),
    # multiprocessing's shared objects (their arena is a file in /dev/shm) refused with ENOSPC:
    # "No space left on device to allocate `multiprocessing.Value`".
    Family(
        "dev_shm_full",
        "shm_exhausted",
        "high",
        _p(
            r"No space left on device[^\n]{0,60}?\bmultiprocessing\.(?:Value|Array|RawValue"
            r"|RawArray|Lock|Queue|shared_memory)\b"
        ),
    ),
    # UCX's POSIX transport: "Not enough memory to write total of N bytes. Please check that
    # /dev/shm or the directory you specified has more available memory".
    Family(
        "mpi_shm_backing_file",
        "shm_exhausted",
        "high",
        _p(r"\bPlease check that /dev/shm\b[^\n]{0,80}?\bmore available memory\b", _I),
    ),
    # Open MPI's shared-memory transport finding no room in /dev/shm for its backing file
    # ("It appears as if there is not enough space for /dev/shm/vader_segment...").
    Family(
        "mpi_shm_backing_file",
        "shm_exhausted",
        "high",
        _p(r"\bnot enough space for " + _SHM_DIR + r"/", _I),
    ),
    # /dev/shm, or /run/shm (the same tmpfs on Debian-based systems), out of space.
    Family(
        "dev_shm_full",
        "shm_exhausted",
        "high",
        _p(
            _SHM_DIR + r"\S{0,200}[^\n]{0,200}No space left on device"
            r"|\b(?:running out of|ran out of|out of|no) space (?:in|on) "
            + _SHM_DIR
            + r"|"
            + _SHM_DIR
            + r" (?:is|was) full"
            # pandarallel's check of its memory file system: "you don't have enough available
            # space in `dev/shm`".
            + r"|(?:n't|\bnot) have enough (?:available )?space in [`'\"]?/?dev/shm\b",
            _I,
        ),
        # A condition ("if /dev/shm is full the loader may hang") is not a report of one; a
        # runtime failing to mount a fresh /dev/shm into a container with ENOSPC has hit the
        # host's mount limit (a leak of mounts), not a full tmpfs.
        unless=_p(
            r"\b(?:if|in case|unless|when|whenever)\s{1,3}(?:the )?"
            + _SHM_DIR
            + r" (?:is|was) full|"
            + _ENOSPC_OUTSIDE_SHM,
            _I,
        ),
    ),
    # /dev/shm told filling up, or enlarged to get a job to run: "/dev/shm in the server pod
    # is quickly filling up", "had to manually increase the Docker `/dev/shm`".
    Family(
        "dev_shm_full",
        "shm_exhausted",
        "medium",
        _p(
            _SHM_DIR + r"`?(?: volume)?(?: (?:in|of) [^\n]{1,60}?)? (?:is |was |keeps )?"
            r"(?:quickly |constantly )?(?:filling up|filled up|fills up|completely filled)\b"
            r"|\b(?:had|needed) to (?:manually )?(?:increase|enlarge|raise|bump)\b[^\n]{0,30}?"
            + _SHM_DIR
            # ... or found too small for what crashed: "it was caused by too little /dev/shm".
            + r"|\b(?:caused by|because of|due to) (?:too little|too small|not enough"
            r"|insufficient)\W{1,3}" + _SHM_DIR,
            _I,
        ),
    ),
    # A crash beside /dev/shm said to be limited to a small size: "/dev/shm inside the
    # runtime is limited to 64MB ... Chrome sometimes crashes because this isn't enough".
    Family(
        "dev_shm_full",
        "shm_exhausted",
        "medium",
        _p(_SHM_DIR + r"\W{0,2}[^\n]{0,60}? is (?:limited to|only) \d{1,4} ?[KM]i?B\b", _I),
        near=_p(r"\bcrash(?:es|ed|ing)?\b|\bBus error\b|\bkilled\b|\bout of memory\b", _I),
        span=2,
        unless=_p(r"\b(?:if|when|whenever|in case)\b", _I),
    ),
    # A container's shm size too small, and what it did to the job, in one sentence: "the
    # docker shm size is not propagated ... and immediately go out of memory (dataloader
    # killed error)".
    Family(
        "dev_shm_full",
        "shm_exhausted",
        "medium",
        _p(
            r"\b(?:docker |container )?shm[- _]?size\b[^\n]{0,160}?"
            r"\b(?:go(?:es)? out of memory|out of (?:shared )?memory|(?:data ?loader|worker)s?"
            r" (?:is |was |got |gets )?killed)\b",
            _I,
        ),
        unless=_p(r"\b(?:if|when|whenever|in case)\b", _I),
    ),
    # ENOSPC on a line of its own, and the same post saying /dev/shm filled up: the failed
    # write was to shared memory, not to a disk.
    Family(
        "dev_shm_full",
        "shm_exhausted",
        "medium",
        _p(_ENOSPC, _I),
        near=_p(
            r"\bfill\w{0,3} (?:up )?(?:all |the )?(?:of )?"
            + _SHM_DIR
            + r"|"
            + _SHM_DIR
            + r"\s{0,4}(?:is |was |gets |got )?(?:full\b|filled\b|100%)"
            + r"|"
            + _SHM_DIR
            + r"[^\n]{0,12}(?:如果满|满了|已满|占满|がいっぱい)",
            _I,
        ),
        span=4,
        # A write that names its path names where it failed: a file outside shared memory
        # is on a disk, whatever else the post says of /dev/shm.
        unless=_p(_ENOSPC_OUTSIDE_SHM),
    ),
    # ENOSPC beside shared memory named in words ("a missing shared memory mount", "SHM"),
    # or raised while a data loader's workers hand batches over: both write to /dev/shm.
    Family(
        "dev_shm_full",
        "shm_exhausted",
        "medium",
        _p(_ENOSPC, _I),
        near=_p(
            r"shared memory(?! implementation)|\bSHM\b|--ipc[= ]host"
            r"|\bDataLoader\b|\bdata ?loader\b|\bnum_workers\b",
            _I,
        ),
        span=2,
        unless=_p(
            _ENOSPC_OUTSIDE_SHM
            + r"|torch\.save|save_pretrained|checkpoint|\bpip\b|\bconda\b|docker (?:pull|build)",
            _I,
        ),
    ),
    # ENOSPC, and within a few lines the cure a thread gives for a small /dev/shm (Docker's
    # --shm-size or --ipc=host): the write that failed was to shared memory.
    Family(
        "dev_shm_full",
        "shm_exhausted",
        "medium",
        _p(_ENOSPC, _I),
        # ... or pandarallel's announcement that its workers' data goes through /dev/shm.
        near=_p(
            r"--ipc[= ]host|--shm[-_]size|\bshm[-_ ]size\b|\bshm_size\b"
            r"|\bPandarallel will use Memory file system\b",
            _I,
        ),
        span=8,
        unless=_p(_ENOSPC_OUTSIDE_SHM),
    ),
    # ENOSPC from a semaphore or shared array: multiprocessing keeps those in /dev/shm.
    Family(
        "semlock_enospc",
        "shm_exhausted",
        "medium",
        _p(r"\[Errno 28\] No space left on device|No space left on device \(28\)"),
        near=_MULTIPROCESSING,
        span=8,
        # Some loggers print the error before its frames: the whole traceback counts.
        near_traceback=True,
    ),
    # The bare message (a title, a logger's line) over a traceback through multiprocessing's
    # lock: the semaphore lives in /dev/shm.
    Family(
        "semlock_enospc",
        "shm_exhausted",
        "medium",
        _p(r"^\W{0,8}(?:OSError: )?No space left on device\W{0,8}$", re.MULTILINE),
        near=_p(r"SemLock|ctx\.Lock\(|multiprocessing/synchronize\.py|Lock\(ctx="),
        span=20,
        near_traceback=True,
    ),
    # System V shared memory (shmget) out of space.
    Family(
        "sysv_shm_enospc",
        "shm_exhausted",
        "high",
        _p(
            r"\bshmget\b[^\n]{0,80}?(?:error 28\b|No space left on device|ENOSPC)"
            # PostgreSQL: System V segments, and dynamic shared memory in /dev/shm.
            r"|could not (?:create|resize) shared memory segment[^\n]{0,120}?"
            r"No space left on device"
        ),
    ),
    # ... its resize named without the errno ("PostgreSQL sometimes raises a 'could not
    # resize shared memory segment' error"): a dynamic segment in /dev/shm only fails to
    # grow when the filesystem is full.
    Family(
        "sysv_shm_enospc",
        "shm_exhausted",
        "medium",
        _p(r"\bcould not resize shared memory segment\b"),
    ),
    Family(
        "bus_error_with_workers",
        "shm_exhausted",
        "medium",
        # SIGBUS by name or number ("signaled to shutdown with signal 7"), or as a launcher
        # reports its worker's end ("exits with return code = -7", torchrun's "exitcode: -7").
        _p(
            r"\bBus error\b|\bSIGBUS\b|\bsignal:? 7\b"
            r"|\bexits with return(?: code)?\s{0,3}=?\s{0,3}-7\b|\bexitcode\s{0,3}:\s{0,3}-7\b"
            r"|\breturn code\s{0,3}=\s{0,3}-7\b",
            _I,
        ),
        # shm named on its own counts too: "(shm)", "increase `shm`", "--shm-size".
        # PostgreSQL's initdb names its setting ("dynamic shared memory implementation"),
        # which says nothing about /dev/shm's size.
        near=_p(
            r"DataLoader|dataloader|num_workers|shared? ?memory(?! implementation)|/dev/shm"
            # torch's Tensor.share_memory_() and a module's share_memory().
            r"|\bshare_memory(?:_\(|\b)"
            r"|SharedArray|\bshm[-_ ]size\b|\bshm\b"
            # multiprocessing's resource tracker finding the workers' semaphores left behind.
            r"|\bleaked semaphore objects?\b"
            # ... in Chinese: "docker共享内存开小了" (docker's shared memory set too small).
            r"|\u5171\u4eab\u5185\u5b58",
            _I,
        ),
        span=8,
        # df showing a /dev/shm of gigabytes empty beside it: the bus error is not /dev/shm
        # filling up (a small one shown empty before a job fills it still may be); nor
        # when df shows the root filesystem full (a file mapped from a full disk), or the
        # host's huge pages are named (a mapping of huge pages the container may not use).
        unless_near=_p(
            r"\b\d{1,5}(?:\.\d{1,2})?[GT]\s{1,12}0\s{1,12}\d{1,5}(?:\.\d{1,2})?[GT]\s{1,4}0%\s{1,4}/dev/shm\s*$"
            r"|\s100%\s{1,4}/\s*$|\bhuge ?pages?\b|\bhugetlb",
            re.IGNORECASE | re.MULTILINE,
        ),
        unless_span=12,
    ),
    *SHM_TOLD,
)
