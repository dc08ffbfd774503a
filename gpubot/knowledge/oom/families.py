"""Families of evidence: the many wordings of one failure, each with its class and confidence.

Every pattern is a bounded alternation of literals (no nested unbounded repeats), so a
megabyte-long line costs linear time; the scanning itself is in oom_scan.
"""

from __future__ import annotations

import re

from gpubot.knowledge.oom.libraries import LIBRARY_GPU_OOM, LIBRARY_HOST_OOM
from gpubot.knowledge.oom.localized import LOCALIZED_GPU_OOM, LOCALIZED_HOST_OOM
from gpubot.knowledge.oom.not_memory import ABSURD_SIZE
from gpubot.knowledge.oom.reported import REPORTED_GPU_OOM, REPORTED_HOST_OOM, REPORTED_SHM
from gpubot.knowledge.oom.scan import Family
from gpubot.knowledge.oom.stacks import STACK_GPU_OOM, STACK_HOST_OOM, STACK_SHM
from gpubot.knowledge.oom.told import TOLD_HOST_OOM


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | flags)


_I = re.IGNORECASE
# A line that only advises what to do if an OOM happens ("If you encounter CUDA out of memory,
# try --tile") is not evidence that one did.
_ADVICE = (
    r"\b(?:if|when|in case) you(?:'re| are)? (?:encounter|get|see|hit|run into|face|meet|have"
    r"|run out|running out)\b"
)
# CUDA errors that are not a shortage of memory, as a failed call reports them.
_OTHER_CUDA_ERROR = (
    r"illegal memory access|cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS"
    r"|unspecified launch failure|misaligned address"
    r"|busy or unavailable|cudaErrorDevicesUnavailable|CUDA_ERROR_DEVICE_UNAVAILABLE"
)
_HEDGED = (
    r"\b(?:potential|possible|probable) (?:root )?causes?\b|\bmay be caused by\b"
    # Ray's newer wording of the same list: "Some common causes include: (1) ... OOM killer".
    r"|\b(?:common|likely|usual|typical) causes? (?:include|are)\b"
)
# TensorFlow and XLA name the device an allocation failed on: the CPU's allocators (and the
# pinned host pool) are host memory, and numpy's MemoryError inside TF's wrapper is too.
# ENOSPC in its wordings, and one whose message names a path outside shared memory.
_ENOSPC = r"No space left on device|\bENOSPC\b|\[Errno 28\]"
_ENOSPC_ON_A_DISK_PATH = r"No space left on device\W{1,4}/(?!dev/shm|run/shm)"
_HOST_DEVICE = (
    r"/device:CPU:\d|\bby allocator (?:cpu|mklcpu|cuda_host_bfc|gpu_host_bfc)\b"
    r"|MemoryError: Unable to allocate"
)

GPU_OOM: tuple[Family, ...] = (
    Family(
        "pytorch_cuda_oom",
        "cuda_oom",
        "high",
        _p(r"(?:CUDA|HIP|XPU|MPS backend) out of memory|torch(?:\.cuda)?\.OutOfMemoryError"),
        unless=_p(_ADVICE, _I),
    ),
    # The allocator's tail without its head: "Tried to allocate 2.00 MiB (GPU 0; 7.93 GiB
    # total capacity; ..." or "... GPU 0 has a total capacity of ...", or its bracketed
    # numbers alone: "(GPU 0; 15.75 GiB total capacity; 79.11 MiB already allocated; ...".
    Family(
        "pytorch_allocator_tail",
        "cuda_oom",
        "medium",
        _p(
            r"Tried to allocate \d[\d.]{0,20} ?\w{1,5}[ .]{1,3}\(?GPU \d{1,3}(?:; | has a total)"
            r"|\(GPU \d{1,3}; \d[\d.]{0,20} ?\w{1,5} total capacity; [^\n]{0,80}?"
            r"(?:already allocated|free;)"
            # The message's own last sentence, which only the allocator's OOM prints ("If
            # reserved memory is >> allocated memory try setting max_split_size_mb ...").
            r"|llocated memory(?: is large)? try setting "
            r"(?:max_split_size_mb|PYTORCH_(?:CUDA|HIP)_ALLOC_CONF\S{0,40}) to avoid fragmentation"
        ),
        # A logger that wraps its lines may break the message anywhere ("... 13.20 GiB. GPU 0"
        # / "has a total capacity of ...").
        wraps=True,
    ),
    Family(
        "cuda_runtime_oom",
        "cuda_oom",
        "high",
        _p(
            r"CUDA error: out of memory|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY"
            r"|cuda runtime error \(2\) : out of memory|cudaMalloc(?:Async)? failed"
            r"|cuMemAlloc(?:Async)? failed|CUDA driver error: out of memory"
            r"|\bHIP_ERROR_OutOfMemory\b|\bhipErrorOutOfMemory\b"  # ROCm's codes
        ),
        # An allocation call that failed with another error's name failed for that error
        # (a context poisoned by an earlier illegal access refuses every call after it); and
        # XLA's pinned host memory, refused with the driver's OOM code, is not the card's.
        unless=_p(
            _ADVICE
            + "|"
            + _OTHER_CUDA_ERROR
            + r"|bytes on host: CUDA_ERROR_"
            + r"|pinned memory \(\d{1,20} bytes\) could not be allocated",
            _I,
        ),
    ),
    Family(
        "cudnn_cublas_alloc_failed",
        "cuda_oom",
        "high",
        _p(
            r"CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED|CUSOLVER_STATUS_ALLOC_FAILED"
            r"|CUSPARSE_STATUS_ALLOC_FAILED|CUFFT_ALLOC_FAILED"
        ),
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
        unless=_p(_HOST_DEVICE),
    ),
    # XLA's report of a program whose buffers did not fit the device: "Out of memory while
    # trying to allocate 2359296 bytes." over "BufferAssignment OOM Debugging."
    Family(
        "xla_resource_exhausted",
        "cuda_oom",
        "medium",
        _p(r"\bBufferAssignment OOM Debugging\b"),
        unless=_p(_HOST_DEVICE),
    ),
    # A TPU's (or any XLA device's) high-bandwidth memory: "Ran out of memory in memory space
    # hbm. Used 9.08G of 7.48G hbm. Exceeded hbm capacity by 1.60G."
    Family(
        "xla_resource_exhausted",
        "cuda_oom",
        "high",
        _p(
            r"\bRan out of memory in memory space hbm\b|\bExceeded hbm capacity by\b"
            # XLA's runtime refusing a device buffer (a TPU's HBM, a GPU's memory).
            r"|\bError allocating device buffer: Attempting to allocate\b",
            _I,
        ),
    ),
    Family(
        "tf_resource_exhausted",
        "cuda_oom",
        "high",
        _p(
            r"OOM when allocating tensor"
            r"|ResourceExhaustedError\b.{0,200}?(?:failed to allocate memory|out of memory)"
            r"|failed to allocate memory \[Op:"
            r"|ran out of memory trying to allocate"
            # TF1's "ResourceExhaustedError (see above for traceback): OOM" and the tensors
            # report_tensor_allocations_upon_oom lists on the GPU's BFC allocator.
            r"|ResourceExhaustedError\b[^\n]{0,200}?\bOOM\b"
            r"|Current usage from device: \S{0,160}, allocator: GPU_\d{1,3}_bfc",
            _I,
        ),
        wraps=True,
        # The BFC allocator's own warning that a fallback was taken is not a failure.
        unless=_p(rf"caller indicates that this is not a failure|{_HOST_DEVICE}"),
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
            r"|Not enough memory to handle \d{1,9} (?:prefill |total )?tokens"
            # SGLang: the weights took the share of the device the KV cache pool needed.
            # vLLM's profile leaving the KV cache nothing: "reserved for KV Cache is -1.05GiB".
            r"|\breserved for KV Cache is -\d"
            r"|\bleave no (?:GPU |device )?memory for the KV cache"
            r"|\bno (?:GPU |device )?memory (?:left |remaining )?for the KV cache"
        ),
        wraps=True,
    ),
    Family(
        "accelerate_batch_search",
        "cuda_oom",
        "medium",
        _p(r"No executable batch size found, reached zero"),
    ),
    *LIBRARY_GPU_OOM,
    *REPORTED_GPU_OOM,
    *LOCALIZED_GPU_OOM,
    *STACK_GPU_OOM,
    # Last resort for GPU wording not known above: "out of memory" said of a device, or of a
    # GPU allocator or pool named in one word ("CudaCustomAllocator out of memory").
    Family(
        "gpu_out_of_memory_generic",
        "cuda_oom",
        "medium",
        _p(
            # GPU as a word, not inside a host's name ("gke-pool-gpu-n1-7lpz ran out of memory").
            r"(?:(?<![\w-])GPU\b(?!-\w)|\bCUDA\b|\bcuda\b|\bCUDA_ERROR_|device memory)"
            r"[^\n]{0,80}?out of memory"
            r"|cudaMalloc[^\n]{0,240}?out of memory"  # a C++ message names the call, then why
            # ... or its source file and line: "CUDA error: .../device_helpers.cuh(386): out of
            # memory" (XGBoost's GPU updater).
            r"|\bCUDA error:? [^\n]{0,240}?\.(?:cuh?|cpp|cc|hpp|h)\(\d{1,6}\):? out of memory"
            # RELION's accelerated code: "out of memory in .../acc_backprojector_impl.h at line
            # 37 (error-code 2)" (cudaErrorMemoryAllocation).
            r"|\bout of memory in \S{1,300} at line \d{1,6} \(error-code 2\)"
            r"|\bInsufficient memory on accelerator\b"  # LAMMPS' GPU package
            r"|\b(?:cuda|gpu|hip)\w{0,40}?(?:alloc|pool)\w{0,20}[^\n]{0,60}?out of memory"
            r"|out of (?:GPU|device|video) (?:and [\w ]{1,30}?)?memory"  # Blender Cycles
            r"|OpenEncodeSessionEx failed: out of memory"  # NVENC, the GPU's video encoder
            r"|\bthrowing out of memory GPU_MGR\b"  # HeavyDB's GPU buffer manager
            r"|\b(?:InitializeEncoder|CreateBitstreamBuffer|CreateInputBuffer|RegisterResource)"
            r" failed: out of memory \(10\)"  # ffmpeg's NVENC: NV_ENC_ERR_OUT_OF_MEMORY
            r"|Requested amount of GPU memory \(\d{1,20} bytes\) could not be allocated"
            # Torch 0.x's THC check and glog's CHECK on a CUDA call: code 2 is
            # cudaErrorMemoryAllocation.
            r"|THCudaCheck FAIL[^\n]{0,400}?(?:out of memory|error=2\b)"
            r"|cudaSuccess \(2 vs\.? 0\)|\bcudaErrorMemoryAllocation\b"
            r"|GpuLaunchKernel[^\n]{0,400}?out of memory"  # TF launching a GPU kernel
            r"|\bfailed due to insufficient GPU memory\b"  # TensorRT-LLM's executor
            # The CUDA samples' wording: "Failed to allocate device vector A (error code out
            # of memory)!".
            r"|\bFailed to allocate device [^\n]{0,60}?\(error code out of memory\)",
            _I,
        ),
        # A C++ exception's what() names the CUDA allocator's source file on one line and
        # the error on the next.
        wraps=True,
        # A host's name may hold "gpu" (gpu-node-7): the kernel's OOM killer on it is the host's.
        unless=_p(
            r"Java heap|OutOfMemoryError: (?:Java|GC|Metaspace)|Kill(?:ed)? process"
            r"|Memory cgroup out of memory|\boom[-_]kill|invoked oom-killer"
            r"|bytes on host: CUDA_ERROR_"  # XLA's pinned host memory
            r"|pinned memory \(\d{1,20} bytes\) could not be allocated|"  # CuPy's staging
            + _ADVICE
            # A list of what it could have been ("could be out of memory killer, segfault").
            + r"|\b(?:could|might|may) be (?:the )?out of memory\b"
            # A guess between the card and the host ("gpu or ram went out of memory").
            + r"|\b(?:GPU|VRAM) or (?:the )?(?:CPU |system |host )?(?:RAM|memory)\b"
            + r"|\b(?:RAM|CPU) or (?:the )?(?:GPU|VRAM)\b",
            _I,
        ),
    ),
    # RAPIDS (cuDF, Spark RAPIDS): its CUDA exception, and its device store's failed allocation.
    Family(
        "gpu_out_of_memory_generic",
        "cuda_oom",
        "medium",
        _p(
            r"\bcudf\.CudaException: out of memory\b"
            r"|\bDevice allocation of \d{1,20} bytes failed, device store has\b"
        ),
    ),
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
            + r" (?:is|was) full",
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
        unless=_p(_ENOSPC_ON_A_DISK_PATH),
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
            _ENOSPC_ON_A_DISK_PATH
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
        near=_p(r"--ipc[= ]host|--shm[-_]size|\bshm[-_ ]size\b|\bshm_size\b", _I),
        span=8,
        unless=_p(_ENOSPC_ON_A_DISK_PATH),
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
    Family(
        "bus_error_with_workers",
        "shm_exhausted",
        "medium",
        # SIGBUS by name or number ("signaled to shutdown with signal 7"), or as a launcher
        # reports its worker's end ("exits with return code = -7", torchrun's "exitcode: -7").
        _p(
            r"\bBus error\b|\bSIGBUS\b|\bsignal:? 7\b"
            r"|\bexits with return code = -7\b|\bexitcode\s{0,3}:\s{0,3}-7\b",
            _I,
        ),
        # shm named on its own counts too: "(shm)", "increase `shm`", "--shm-size".
        # PostgreSQL's initdb names its setting ("dynamic shared memory implementation"),
        # which says nothing about /dev/shm's size.
        near=_p(
            r"DataLoader|dataloader|num_workers|shared memory(?! implementation)|/dev/shm"
            r"|SharedArray|shm-size|\bshm\b",
            _I,
        ),
        span=8,
        # df showing a /dev/shm of gigabytes empty beside it: the bus error is not /dev/shm
        # filling up (a small one shown empty before a job fills it still may be).
        unless_near=_p(
            r"\b\d{1,5}(?:\.\d{1,2})?[GT]\s{1,12}0\s{1,12}\d{1,5}(?:\.\d{1,2})?[GT]\s{1,4}0%\s{1,4}/dev/shm\s*$"
        ),
        unless_span=12,
    ),
)

HOST: tuple[Family, ...] = (
    Family(
        "tf_host_allocator",
        "host_oom_killed",
        "high",
        _p(
            r"(?:OOM when allocating tensor|Resource exhausted|RESOURCE_EXHAUSTED"
            r"|ResourceExhaustedError)[^\n]{0,400}?"
            r"(?:/device:CPU:\d|\bby allocator (?:cpu|mklcpu|cuda_host_bfc|gpu_host_bfc)\b)",
            _I,
        ),
    ),
    Family(
        "kernel_oom_killer",
        "host_oom_killed",
        "high",
        _p(
            r"Out of memory: Kill(?:ed)? process|Memory cgroup out of memory"
            r"|\boom-kill:|invoked oom-killer|oom_reaper: reaped|oom_kill_process"
            r"|Detected \d{1,6} oom[-_]kill event"  # Slurm's cgroup plugin
            r"|killed by (?:the |SIGKILL by )?(?:Linux )?OOM[- ]killer"
            r"|\b(?:has been|have been|was|were|got|is being|are being|potentially) OOM[- ]Killed\b"
            r"|\bcontainer oom [0-9a-f]{12,64}\b"  # docker events
            r"|killed by the cgroup out-of-memory handler"
            r"|killed as a result of limit of|Out of memory and no killable processes"
            r"|System OOM encountered|\bSystemOOM\b"  # cgroup v1: "Task in /kubepods... killed as"
            r"|Cgroup OOM encountered|\bCgroupOOM\b"  # the kubelet's events for both
            # The OOM killer's victim line on its own (older kernels print no prefix to it).
            r"|\bKilled process \d{1,10} \([^)\n]{1,64}\)[^\n]{0,80}?total-vm:",
            _I,
        ),
        # A list of what might have happened (Ray's "potential root causes. (1) ... OOM
        # killer (2) ray stop --force (3) SIGSEGV") names no cause.
        unless=_p(_HEDGED, _I),
    ),
    Family(
        "kubelet_oomkilled",
        "host_oom_killed",
        "high",
        # Not `OOMKilled: false`, which docker inspect prints for every other exit.
        _p(
            r"\b(?:OOMKill(?:ed|ing)|OOM ?[Kk]ill(?:ed|ing))\b"
            r"(?!\"?\s{0,3}[:=]?\s{0,3}\"?(?:false|False)\b)"
            # "OOMKill" alone as a diagnostic report names the reason: "Restart Reason:
            # OOMKill (memory exceeded limit, SIGKILL)", "OOMKill (Exit Code 137)". Not the
            # noun in a sentence ("a signal 9 is often related to an OOMKill").
            r"|\bOOMKills?\**\s{0,3}\((?:[Ee]xit(?: [Cc]ode)?|memory|137\b)"
            # ... and the kill told as still happening: "the queryNode is still oomkilled".
            r"|\b(?:is|was|are|were|gets|got) still (?i:OOM[- ]?killed)\b"
            r"|\b[Rr]eason\W{1,6}OOMKill\b"
        ),
        # Nor the title of an article a post links to ("[OOMKilled Kubernetes Error](https:").
        unless=_p(r"\[[^\]\n]{0,80}\bOOM ?Kill\w{0,3}\b[^\]\n]{0,80}\]\(https?://"),
    ),
    Family(
        "kubelet_memory_eviction",
        "host_oom_killed",
        "high",
        _p(
            r"low on resource: memory|had condition: \[MemoryPressure\]"
            r"|evicted due to (?:node )?memory pressure"
            # The kubelet's eviction manager and its node event, reclaiming memory.
            r"|EvictionThresholdMet[^\n]{0,200}?reclaim memory|signal=memory\.available"
            r"|eviction manager: [^\n]{0,120}\[MemoryPressure\]",
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
            # Ray before 2.x: the memory monitor raised instead of killing.
            r"|RayOutOfMemoryError\b|More than \d{1,3}% of the memory on node"
            r"|killing latest task[^\n]{0,200}to avoid running out of memory"
            r"|exceeds the memory usage threshold[^\n]{0,40}Ray killed this worker"
        ),
    ),
    # Userspace OOM killers act before the kernel's, on memory pressure.
    Family(
        "userspace_oom_killer",
        "host_oom_killed",
        "high",
        _p(
            r"systemd-oomd\[\d{1,10}\]: Killed|earlyoom[^\n]{0,80}(?:low memory|sending SIGKILL)"
            r"|\bKilled [^\n]{0,160}? due to memory (?:pressure|used)"
        ),
        # earlyoom saying its kill failed: nothing died for memory (oom_killer_failed).
        unless_near=_p(r"\bearlyoom\[\d{1,10}\]: kill failed\b", _I),
        unless_span=12,
    ),
    Family(
        "dask_memory_budget",
        "host_oom_killed",
        "high",
        # Not a budget of 0 %, a setting that restarts every worker at once.
        _p(r"exceeded [1-9]\d{0,2}% memory budget|[1-9]\d{0,2}% memory budget\. Restarting"),
    ),
    Family(
        "batch_scheduler_memory_kill",
        "host_oom_killed",
        "medium",
        _p(
            r"task \d{1,6}: Out Of Memory|exceeded (?:job |its )?memory limit"
            r"|running beyond physical memory limits|Container killed due to memory usage"
            r"|killed by YARN for exceeding (?:physical )?memory limits"
            r"|\bTERM_MEMLIMIT\b|\bjob killed: (?:p|v)?mem\b"  # LSF, PBS
            r"|Memory limit of [\d.]{1,12} ?[KMGT]i?B exceeded"  # Cloud Run
            r"|Exceeded (?:soft|hard) (?:private )?memory limit"  # App Engine
            # HTCondor holding (stopping) a job over its memory request.
            r"|\bput on hold by SYSTEM_PERIODIC_HOLD due to memory usage\b"
            r"|\bJob has gone over (?:cgroup )?memory limit of\b"
            r"|\b(?:held|put on hold) because of (?:its |their )?memory usage\b"
            r"|\b(?:replica|worker|master|container|task|job)\b[^\n]{0,40}\bran out-of-memory\b",
            _I,
        ),
    ),
    # The kernel refused a host allocation (ENOMEM) instead of killing: the container's limit
    # or the node's RAM was reached all the same. Memory locked for RDMA or pinned for the GPU
    # (ulimit -l) and the dynamic loader's static TLS block fail with the same words and are
    # not a shortage of RAM.
    Family(
        "host_allocation_refused",
        "host_oom_killed",
        "medium",
        _p(
            r"DefaultCPUAllocator: (?:can't allocate memory|not enough memory)"
            r"|\b(?i:Torch: not enough memory: you tried to (?:re)?allocate)"  # TH's CPU allocator
            r"|\bmkl_malloc: failed to allocate memory"  # Intel MKL
            # macOS malloc, for a size a machine could hold (a negative size cast to 2^64 is
            # another bug).
            r"|mach_vm_map\(size=\d{1,12}(?:, flags: \d{1,10})?\) failed"
            r"|Cannot allocate memory|\bENOMEM\b|\bos error 12\b"
            r"|\bMemoryError(?::|\s{0,4}$)|_ArrayMemoryError\b|std::bad_alloc"
            r"|paging file is too small|\bruntime: out of memory"  # Windows, Go
            r"|^fatal error: out of memory\s*$|VirtualAlloc of (?:\d{1,20} )?bytes failed"  # Go
            r"|\b(?:unable|failed) to allocate (?:a )?CPU buffer\b"  # ggml (llama.cpp, Ollama)
            r"|memory allocation of \d{1,20} bytes failed"  # Rust
            r"|\bC error: out of memory"  # pandas' C parser
            r"|\bvirtual memory exhausted\b"  # GCC and other tools, on a refused allocation
            # The JVM's own process (not its heap) refused by the OS: its hs_err report.
            r"|\bNative memory allocation \((?:malloc|mmap)\) failed to (?:allocate|map)\b"
            r"|\binsufficient memory for the Java Runtime Environment to continue\b"
            r"|\bMalloc returns null: len=\d"  # Blender's guarded allocator
            r"|\bmemory \(RAM\) is insufficient\b"  # Atomsk
            r"|\bMemory allocation failed for \w{1,40} in the routine\b"  # FDS (Fortran)
            r"|\bOut of CPU memory\b"  # gpu4pyscf's check before a host buffer
            # Arrow's memory pool, for a megabyte or more (a few bytes refused is another bug).
            r"|\bArrowMemoryError: (?:realloc|malloc|allocation) of size \d{7,20} failed\b"
            # Unity's allocators; Core ML's Espresso on iOS.
            r"|\bCould not allocate memory: System out of memory!"
            r"|\bDynamicHeapAllocator out of memory\b"
            r"|\bMemory allocation error 12: \d{1,20} bytes\b"
            r"|^ERROR: OutOfMemoryError\(\)"  # Julia's host allocator
        ),
        unless=_p(
            r"static TLS block|\bibv_\w{1,40}|mr_reg|reg_mr|memlock|\bmlock"
            r"|register (?:host )?memory|cudaHostRegister|pinned memory|\block (?:JVM )?memory\b",
            _I,
        ),
        # ... or with the locked-memory limit named a few lines away (Elasticsearch's
        # "Increase RLIMIT_MEMLOCK" under its "Unable to lock JVM Memory: error=12").
        # A size no machine holds (not_memory's ABSURD_SIZE) is another bug.
        unless_near=_p(
            r"\bRLIMIT_MEMLOCK\b|\bmemlock\b|\bmlockall\b"
            # ... or an illegal address behind the refusal (RMM's bad_alloc wrapping it).
            r"|\bcudaErrorIllegalAddress\b|\billegal memory access\b|" + ABSURD_SIZE,
            _I,
        ),
        unless_span=4,
    ),
    *LIBRARY_HOST_OOM,
    *REPORTED_HOST_OOM,
    *TOLD_HOST_OOM,
    *LOCALIZED_HOST_OOM,
    *STACK_HOST_OOM,
)
