"""Host or container memory: the kernel's OOM killer, the memory cgroup, the kubelet's
eviction, memory monitors and refused host allocations, each family with its class and
confidence.

Every pattern is a bounded alternation of literals (no nested unbounded repeats), so a
megabyte-long line costs linear time; the scanning itself is in gpubot.knowledge.oom.scan.
"""

from __future__ import annotations

import re

from gpubot.knowledge.oom.gpu_families import XLA_ON_CPU_WORDS
from gpubot.knowledge.oom.libraries import LIBRARY_HOST_OOM
from gpubot.knowledge.oom.localized import LOCALIZED_HOST_OOM
from gpubot.knowledge.oom.not_memory import ABSURD_SIZE
from gpubot.knowledge.oom.reported import REPORTED_HOST_OOM
from gpubot.knowledge.oom.scan import Family
from gpubot.knowledge.oom.stacks import STACK_HOST_OOM
from gpubot.knowledge.oom.told import TOLD_HOST_OOM
from gpubot.knowledge.oom.told_causes import TOLD_CAUSES
from gpubot.knowledge.oom.told_services import TOLD_BY_SERVICES


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | flags)


_I = re.IGNORECASE
_HEDGED = (
    r"\b(?:potential|possible|probable) (?:root )?causes?\b|\bmay be caused by\b"
    # A reader's guess at someone else's kill: "If you didn't kill it, it likely was killed by
    # the OOM killer."
    r"|\b(?:likely|probably|possibly|maybe|perhaps|might|may|could)\b[^.\n]{0,20}?\bkilled by "
    r"(?:the )?(?:Linux )?OOM[- ]killer"
    # Ray's newer wording of the same list: "Some common causes include: (1) ... OOM killer".
    r"|\b(?:common|likely|usual|typical) causes? (?:include|are)\b"
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
            r"|\bKilled process \d{1,10} \([^)\n]{1,64}\)[^\n]{0,80}?total-vm:"
            # ... quoted short, with the oom-kill summary's task: "Out of memory: Killed ...
            # task=cc1plus".
            r"|\bOut of memory: Killed\b[^\n]{0,40}?\btask=\S",
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
        # Nor the title of an article a post links to ("[OOMKilled Kubernetes Error](https:"),
        # a guess ("thought that maybe ... it's getting OOMKilled") or what should have
        # happened ("Task should be OOMkilled").
        unless=_p(
            r"\[[^\]\n]{0,80}\bOOM ?Kill\w{0,3}\b[^\]\n]{0,80}\]\(https?://"
            r"|\b(?:maybe|perhaps|possibly|whether)\b[^\n]{0,60}?\bOOM ?[Kk]ill"
            r"|\b[Ii] suspect\b[^\n]{0,100}?\bOOM ?[Kk]ill"
            r"|\bOOM ?[Kk]ill\w{0,3},? but I'?m not sure"
            r"|\b(?:should|would|could|must|expected to) (?:have )?(?:be|been|get|gotten) "
            r"(?i:OOM ?kill)"
            # ... a cause considered and set aside ("I thought about a potential `OOMKilled`
            # issue, but the graphs show ..."), or the word defined ("`OOMKilled` is a SIGKILL").
            r"|\b(?:potential|thought about|thought it was)\b[^\n]{0,30}?\bOOM ?[Kk]ill"
            r"|\bOOM ?[Kk]illed\W{0,2} is an? SIGKILL\b"
            # "fairly certain it was not due to Memory issues ... we get the correct reason
            # 'OOMKilled'" (when it is memory, in other cases).
            r"|\bnot (?:due to|caused by|because of) (?:the |a )?(?i:memory|OOM)\b",
        ),
        # The reason beside a SIGTERM's exit status (143): the kernel's OOM killer sends
        # SIGKILL, so the reason is a stale counter, not this container's end.
        unless_near=_p(r"\bexit ?code\W{0,5}143\b", re.IGNORECASE),
        unless_span=2,
    ),
    Family(
        "kubelet_memory_eviction",
        "host_oom_killed",
        "high",
        _p(
            r"low on resource: memory|had condition: \[MemoryPressure\]"
            r"|evicted due to (?:node )?memory pressure"
            # ... told by its owner: "kept getting evicted ... due to exceeding the requested
            # memory" (the kubelet evicts the pods furthest over their request first).
            r"|\bevicted\b[^\n]{0,60}?\b(?:due to|for|because of) (?:(?:exceeding|using more than) "
            r"(?:the |its |their )?(?:requested )?memory(?: request)?|(?:the )?node:? low (?:on )?"
            r"memory)\b"
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
            # The kill report's opening, where a paste cuts the rest: "Memory on the node
            # (IP: …, ID: …) where the task (task ID: …, name=…, pid=…, memory used=…".
            r"|\bMemory on the node \(IP: [^)\n]{1,200}\) where the (?:task|actor) \("
        ),
    ),
    # XLA's allocation refused on the CPU platform: the host's memory ("I want to use CPU
    # platform with 40 GB memory" then "RESOURCE_EXHAUSTED: Out of memory allocating N bytes").
    Family(
        "host_allocation_refused",
        "host_oom_killed",
        "medium",
        _p(r"(?:RESOURCE_EXHAUSTED|Resource exhausted):?\s{0,4}Out of memory allocating \d"),
        near=_p(XLA_ON_CPU_WORDS, _I),
        span=6,
    ),
    # Userspace OOM killers act before the kernel's, on memory pressure.
    Family(
        "userspace_oom_killer",
        "host_oom_killed",
        "high",
        _p(
            r"systemd-oomd\[\d{1,10}\]: Killed|earlyoom[^\n]{0,80}(?:low memory|sending SIGKILL)"
            # earlyoom's lines without its name (a journal's prefix cut off): "low memory! at
            # or below SIGTERM limits", "sending SIGTERM to process 696 uid 1001 \"ipfs\":
            # badness 757".
            r"|\blow memory! at or below SIG(?:TERM|KILL) limits\b"
            r"|\bsending SIG(?:TERM|KILL) to process \d{1,10} uid \d{1,10} \"[^\"\n]{1,100}\": "
            r"badness \d"
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
            r"|running beyond (?:physical|virtual) memory limits"
            r"|Container killed due to memory usage"
            r"|\bExited with status 137 \(out of memory\)"  # Cloud Foundry
            r"|\bexecd enforced h_vmem limit\b"  # Grid Engine
            r"|\bJob has exceeded maxRSS\b"  # WMAgent's watchdog
            r"|\bheld by (?:HT)?condor\b[^\n]{0,60}?\bmemory limit\b"
            r"|killed by YARN for exceeding (?:physical )?memory limits"
            r"|\bTERM_MEMLIMIT\b|\bjob killed: (?:p|v)?mem\b"  # LSF, PBS
            # Cloud Run (its figures sometimes masked as "xx" where the log is quoted).
            r"|Memory limit of (?:[\d.]{1,12}|xx) ?[KMGT](?:i?B)? exceeded"
            r"|\bFunction killed\. Error: memory limit exceeded\b"  # Cloud Functions
            r"|Exceeded (?:soft|hard) (?:private )?memory limit"  # App Engine
            # HTCondor holding (stopping) a job over its memory request.
            r"|\bput on hold by SYSTEM_PERIODIC_HOLD due to memory usage\b"
            r"|\bJob has gone over (?:cgroup )?memory limit of\b"
            r"|\b(?:held|put on hold) because of (?:its |their )?memory usage\b"
            # Galaxy's release script rerunning a job HTCondor held, with more memory.
            r"|\brerunning held job\b[^\n]{0,160}?\bmemory_provisioned \d{1,9}, request_memory\b"
            r"|\b(?:replica|worker|master|container|task|job)\b[^\n]{0,40}\bran out-of-memory\b"
            # HTCondor's hold for a job over its memory request; isolate's cgroup kill count.
            r"|\bHoldReasonCode\s{0,2}=\s{0,2}34\b|\bcg-oom-killed:\s{0,2}[1-9]",
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
            r"DefaultCPUAllocator: (?i:can't allocate memory|not enough memory)"
            r"|\b(?i:Torch: not enough memory: you tried to (?:re)?allocate)"  # TH's CPU allocator
            r"|\bmkl_malloc: failed to allocate memory"  # Intel MKL
            # PostgreSQL's backend refused memory by malloc: "ERROR: out of memory / DETAIL:
            # Failed on request of size 2048 in memory context ..." (its own size cap says
            # "invalid memory alloc request size" instead).
            r"|\bFailed on request of size \d{1,20}(?: in memory context\b|\.)"
            # macOS malloc, for a size a machine could hold (a negative size cast to 2^64 is
            # another bug).
            r"|mach_vm_map\(size=\d{1,12}(?:, flags: \d{1,10})?\) failed"
            r"|Cannot allocate memory|\bENOMEM\b|\bos error 12\b"
            r"|\bMemoryError(?::|\s{0,4}$)|_ArrayMemoryError\b|std::bad_alloc"
            # MSVC's text for std::bad_alloc, as a C++ exception reaches Python on Windows.
            r"|\b(?:Exception|error)\b[^\n]{0,60}?: bad allocation\s*$|\(bad allocation\)"
            # numpy's message without its exception's name, as an app passes it on.
            r"|\b(?i:unable to allocate) [\d.]{1,12} ?[KMGTP]i?B for an array (?:with )?shape\b"
            # ... and its older wording, before it gave the size.
            r"|\b(?i:unable to allocate array with shape) \([\d, ]{1,80}\) and data type\b"
            r"|paging file is too small|\bruntime: out of memory"  # Windows, Go
            # Windows' ERROR_NOT_ENOUGH_MEMORY (8) by code and by text; MSVC's linker.
            r"|\b0x80070008\b|\bERROR_NOT_ENOUGH_MEMORY\b"
            r"|\bNot enough memory resources (?:are available )?to pro(?:cess|ceed)\b"
            r"|\bLNK1102: out of memory\b"
            r"|\bcannot allocate memory for thread-local data\b"  # glibc, a new thread
            # vLLM's check that the host can hold the KV cache's swap space.
            r"|\bToo large swap space\. [\d.]{1,8} GiB out of the [\d.]{1,8} GiB total CPU memory\b"
            r"|^fatal error: out of memory\s*$|VirtualAlloc of (?:\d{1,20} )?bytes failed"  # Go
            r"|\b(?:unable|failed) to allocate (?:a )?CPU buffer\b"  # ggml (llama.cpp, Ollama)
            # ... its CPU backend's buffer and its aligned malloc, and the NULL context buffer
            # an older ggml asserts on after its malloc failed.
            r"|\bggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size \d"
            r"|\bggml_aligned_malloc: insufficient memory\b"
            r"|\bmujoco\.FatalError: Could not allocate memory\b"  # MjData's buffers
            r"|\bGGML_ASSERT: [^\n]{0,200}?ctx->mem_buffer != NULL"
            r"|memory allocation of \d{1,20} bytes failed"  # Rust
            # A C program's malloc wrapper naming its source line: "[kseq2bseq1] Failed to
            # allocate 151 bytes at bwa.c line 37: Out of memory" (htslib, bwa, samtools).
            r"|\bFailed to allocate \d{1,20} bytes at [\w./-]{1,80}\.c(?:pp)? line \d{1,6}: "
            r"Out of memory\b"
            # R's buffers: "Evaluation error: cannot allocate buffer".
            r"|\bcannot allocate buffer\b"
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
            r"|\bArrowMemoryError: (?:realloc|malloc|allocation) of size \d{7,15} failed\b"
            # ... or its exception's name alone ending the traceback, the message not printed.
            r"|\bpyarrow\.lib\.ArrowMemoryError\s*$"
            # ... and its Status as the C++ and R bindings print it, from 100 KB up.
            r"|\bOut of memory: (?:realloc|malloc|allocation) of size \d{6,15} failed\b"
            # A MemoryError as Jupyter heads its traceback: "MemoryError    Traceback (most".
            r"|\bMemoryError\s{2,80}Traceback \(most recent call last\)"
            # Unity's allocators; Core ML's Espresso on iOS.
            r"|\bCould not allocate memory: System out of memory!"
            r"|\bDynamicHeapAllocator out of memory\b"
            r"|\bMemory allocation error 12: \d{1,20} bytes\b"
            r"|^ERROR: OutOfMemoryError\(\)"  # Julia's host allocator
            # PaddlePaddle's host allocator (system_allocator.cc): "ResourceExhaustedError:
            # Fail to alloc memory of 564023296 size, error code is 12." Its GPU allocator says
            # "Out of memory error on GPU N" instead.
            r"|\bFail to alloc memory of \d{1,20} size\b"
            # OpenCV's host allocator: "(-4:Insufficient memory) Failed to allocate 4672512
            # bytes in function 'OutOfMemoryError'".
            r"|\(-4:Insufficient memory\) Failed to allocate \d{1,20} bytes\b"
            r"|\bFailed to allocate CPU Memory\b"  # MXNet's cpu_device_storage.h
            # OpenCL's CL_OUT_OF_HOST_MEMORY, by name or by its text (LightGBM's GPU build).
            r"|\bCL_OUT_OF_HOST_MEMORY\b|Error: Out of Host Memory\b"
            # c10's CPU allocator: "posix_memalign(&data, gAlignment, nbytes) == 0. 12 vs 0".
            r"|\bposix_memalign\([^\n]{0,80}?\) == 0\. 12 vs 0\b"
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
            r"|\bcudaErrorIllegalAddress\b|\billegal memory access\b"
            # ... or Jetson's GPU device nodes refused before it ("Can't initialize nvrm
            # channel ... Cannot allocate memory nvbuf_utils"): permissions, not memory.
            r"|\bCan't initialize nvrm channel\b"
            # ... or the JVM's commit refused for a permission (a PaX kernel), not memory.
            r"|\berror='Operation not permitted' \(errno=1\)|" + ABSURD_SIZE,
            _I,
        ),
        unless_span=4,
    ),
    *LIBRARY_HOST_OOM,
    *REPORTED_HOST_OOM,
    *TOLD_HOST_OOM,
    *TOLD_BY_SERVICES,
    *TOLD_CAUSES,
    *LOCALIZED_HOST_OOM,
    *STACK_HOST_OOM,
)
