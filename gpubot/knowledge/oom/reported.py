"""Memory failures told by whatever reported them, not in the framework's usual sentence.

A GPU out of memory may reach the log only as an exception's header, an allocator's warning,
a driver status code or a framework's failed check; a host kill as the words of whatever did
the killing (systemd-oomd, a batch scheduler, a notebook service, the memory cgroup's own
report, an old kernel's victim line); a full /dev/shm as a server's shared-memory pool or key
that could not grow; a SIGKILL as the scheduler's line about the task. Each family here reads
one such reporter. Patterns follow the bounds of *_families: literals and bounded repeats.
"""

from __future__ import annotations

import re

from gpubot.knowledge.oom.scan import Family


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | flags)


_I = re.IGNORECASE
# The CUDA driver's and runtime's memory calls, as their names and wrappers spell them, and a
# library's own device allocator named in one word (PhysX's PxgCudaDeviceMemoryAllocator).
_MEMORY_API = (
    r"\b(?:cuMem\w{0,24}|cu_mem_\w{1,24}|cuMemoryAllocate|cudaMalloc\w{0,12}|cuda_malloc\w{0,12}"
    r"|cudaMemcpy\w{0,12}|cudaHostAlloc"
    r"|\w{0,24}(?:Cuda|CUDA|Gpu|GPU)\w{0,24}(?:Device)?Memory\w{0,12}Allocator\w{0,12})\b"
)
# Status 2 is CUDA_ERROR_OUT_OF_MEMORY (driver) and cudaErrorMemoryAllocation (runtime).
_STATUS_2 = r"\b(?:res|result|status|err|error|code|rc)\s{0,2}[=:]\s{0,2}2\b"

REPORTED_GPU_OOM: tuple[Family, ...] = (
    # The OutOfMemoryError's message without the sentence in front: ComfyUI and other hosts
    # print only "Allocation on device" (PyTorch's message when the allocator gives no
    # numbers). The cudaMallocAsync wording that goes on ("... would exceed allowed memory")
    # has its own family.
    Family(
        "allocator_oom_header",
        "cuda_oom",
        "high",
        # (or with a logger's source column after it: "Allocation on device    execution.py:430").
        _p(
            r"\bAllocation on device(?: \d{1,3})?(?:\s{0,4}|\s{2,80}\S{1,80}\.py:\d{1,6}\s*)$",
            re.MULTILINE,
        ),
    ),
    # ... or named as what the run got, in a sentence: "i have Allocation on device when
    # VAEDecode".
    Family(
        "allocator_oom_header",
        "cuda_oom",
        "medium",
        _p(
            r"\b(?:have|has|had|get|gets|got|getting|see|saw|with) (?:an? |the )?[`'\"]?"
            r"Allocation on device\b(?! ?\d{0,3} ?would exceed)",
            re.IGNORECASE,
        ),
        unless=_p(r"\b(?:if|whenever|avoid\w{0,3})\b|\?", re.IGNORECASE),
    ),
    # A mobile GPU driver's allocation of the card's memory refused: "sharedmem_gpumem_alloc:
    # mmap failed errno 12 Out of memory" (Qualcomm's Adreno).
    Family(
        "gpu_out_of_memory_generic",
        "cuda_oom",
        "medium",
        _p(r"\b(?:sharedmem_|kgsl_)?gpumem_alloc\w{0,20}:[^\n]{0,60}?(?:errno 12\b|Out of memory)"),
    ),
    # Vulkan's device memory exhausted (ggml's Vulkan backend, games, renderers):
    # VK_ERROR_OUT_OF_DEVICE_MEMORY, as the C API and Vulkan-Hpp name it. Its host-memory
    # twin (VK_ERROR_OUT_OF_HOST_MEMORY) is not the card's.
    Family(
        "vulkan_out_of_device_memory",
        "cuda_oom",
        "high",
        _p(
            r"\bVK_ERROR_OUT_OF_DEVICE_MEMORY\b|\bErrorOutOfDeviceMemory\b|\bOutOfDeviceMemoryError\b"
            r"|\bOomError\(OutOfDeviceMemory\)"  # vulkano (Rust)
            r"|\bCudaError::OutOfMemory\b"  # Rust-CUDA's cust
            r"|\bOutOfMemory\(Device\)"  # wgpu's allocator: AllocationError(OutOfMemory(Device))
            r"|\bWebGPU device error\(\d{1,3}\): Out of memory\b"  # ONNX Runtime Web
        ),
    ),
    # Tenstorrent's allocator: "Out of Memory: Not enough space to allocate N B DRAM buffer
    # across 12 banks".
    Family(
        "accelerator_dram_oom",
        "cuda_oom",
        "high",
        _p(r"\bNot enough space to allocate \d{1,20} B (?:DRAM|L1) buffer across \d{1,4} banks\b"),
    ),
    # AWS Neuron's runtime (Inferentia, Trainium) out of device memory on a NeuronCore:
    # "TDRV:dmem_alloc_internal Failed to alloc DEVICE memory: 469762048", "Failed to
    # allocate 448.000MB (usage: tensors) on ND 0:NC 0".
    Family(
        "neuron_device_memory",
        "cuda_oom",
        "high",
        _p(
            r"\bFailed to alloc DEVICE memory\b"
            r"|\bFailed to allocate [\d.]{1,12} ?[KMG]B \(usage: \w{1,20}\) on ND \d{1,3}:NC \d"
        ),
    ),
    # wgpu's validation error for a buffer or texture it could not get memory for.
    Family(
        "vulkan_out_of_device_memory",
        "cuda_oom",
        "medium",
        _p(r"\bNot enough memory left\b"),
        near=_p(r"\bDevice::create_(?:buffer|texture)\b"),
        span=4,
    ),
    # The caching allocator's own warning: cudaMalloc failed with OOM on a device.
    Family(
        "allocator_oom_warning",
        "cuda_oom",
        "medium",
        _p(r"\bmemory allocation failed with OOM on device \d{1,3}\b"),
    ),
    # A memory call's status given as a number (vGPU shims, memory savers, C++ wrappers).
    Family(
        "driver_status_out_of_memory",
        "cuda_oom",
        "high",
        _p(
            _MEMORY_API + r"[^\n]{0,120}?" + _STATUS_2 + "|" + _STATUS_2 + r"[^\n]{0,120}?"
            r"(?:func=)?" + _MEMORY_API + r"|\bCUDA failure 2\b",
            _I,
        ),
    ),
    # A GPU-sharing layer (a vGPU shim such as HAMi's) refusing an allocation past the share
    # of device memory it gives the container: "Device 0 OOM 3171158016 / 3145728000". The
    # framework above it often sees only an unrecognized CUDA error.
    Family(
        "gpu_memory_quota",
        "cuda_oom",
        "high",
        _p(r"\bDevice \d{1,3} OOM \d{1,20} ?/ ?\d{1,20}\b"),
        # A usage within a few GiB of 2^64 is a negative counter cast to unsigned: the
        # quota's accounting went wrong, nothing was exhausted.
        unless=_p(r"\bOOM 18446744\d{12}\b"),
    ),
    # A framework's check that the chunk it needs fits in what the GPU has free (Paddle's
    # "enforce allocating <= available failed, A > B"), or its allocator saying it failed
    # for want of memory.
    Family(
        "gpu_allocator_check",
        "cuda_oom",
        "high",
        _p(
            r"\benforce allocating <=? available failed\b"
            r"|\b(?:GPU|device) memory allocation failed\b[^\n]{0,80}?"
            r"\b(?:insufficient|not enough|out of) memory\b",
            _I,
        ),
    ),
    # A GPU allocation that failed, said in words rather than an API's status: "fails to
    # allocate GPU memory", "a CUDA error about failing to allocate memory". Not pinned or
    # host memory, not an allocation refused for another CUDA error, not a sized request.
    Family(
        "gpu_allocation_failed",
        "cuda_oom",
        "medium",
        _p(
            r"\b(?:fail(?:s|ed|ing)?|unable) to allocate (?:enough |any )?(?:GPU|CUDA|device|video)"
            r" memory\b"
            r"|\bCUDA error\b[^\n]{0,30}?\bfail(?:s|ed|ing)? to allocate (?:enough |any )?memory\b",
            _I,
        ),
        unless=_p(
            r"\binvalid argument\b|\billegal memory access\b|\bpinned\b|\bhost memory\b"
            r"|cudaHostAlloc"
            # Triton's warning that its CUDA pool is short and it uses pinned memory instead.
            r"|\bFailed to allocate CUDA memory with byte size\b"
            # A sized request in an allocator's own check is judged by its numbers elsewhere.
            r"|\bmemory:?\s{0,2}\d{1,20}\s{0,2}(?:bytes|[KMGT]i?B)\b|\bCheck failed\b",
            _I,
        ),
    ),
    # GPU memory found short before or during a load ("Insufficient GPU memory error: The
    # available single GPU memory is ..."), and Apple Metal's command buffer out of memory.
    Family(
        "gpu_memory_insufficient",
        "cuda_oom",
        "medium",
        _p(
            r"\bInsufficient (?:GPU|VRAM|video|device) memory\b"
            r"|\bkIOGPUCommandBufferCallbackErrorOutOfMemory\b"
            # ... as MLX and Metal's Swift API name it: "[METAL] Command buffer execution
            # failed: Insufficient Memory", "MTLCommandBufferErrorDomain Code=8".
            r"|\bCommand buffer execution failed: Insufficient Memory\b"
            r"|\bMTLCommandBufferErrorDomain Code=8\b|\bInsufficient Memory \(IOAF code 8\)"
            # Jetson's NVMAP (the GPU's share of unified memory): "NvMapMemAllocInternalTagged:
            # 1075072515 error 12", or that call's failure named in a sentence.
            r"|\bNvMapMemAlloc\w{0,20}:? \d{1,12} error 12\b|\bNvMapMemAlloc\w{0,20}`? failure\b",
            _I,
        ),
        # Nor the scheduler placing a pod ("0/3 nodes are available: 1 Insufficient GPU
        # Memory in one device"): nothing ran yet, let alone out of memory.
        unless=_p(
            r"\b(?:if|when|in case|whether|might|may|could)\b"
            r"|\b(?:RAM|CPU) or (?:the )?(?:GPU|VRAM)\b"
            r"|\bnodes? (?:are|is) available\b|\bFailedScheduling\b",
            _I,
        ),
    ),
)

REPORTED_SHM: tuple[Family, ...] = (
    # A server's shared-memory pool, key or region that could not be created or grown for
    # want of space: Triton's python backend keeps them in /dev/shm.
    Family(
        "shm_pool_enospc",
        "shm_exhausted",
        "high",
        _p(
            r"\bshared memory (?:pool|key|region)\b[^\n]{0,300}?"
            r"(?:No space left on device|ENOSPC|Errno 28\b)"
            # Triton creating a key at a size: only the space for it can be missing.
            r"|\bUnable to initialize shared memory key \S{1,120} to requested size\b",
            _I,
        ),
        # Not a pool that failed for another reason ("Error: Connection timed out").
        unless=_p(r"\bError: (?!No space left on device)[A-Z]"),
    ),
    # A check before start-up that /dev/shm is too small (vLLM, Ray's object store).
    Family(
        "dev_shm_too_small",
        "shm_exhausted",
        "high",
        _p(
            r"\b(?:Insufficient|not enough) (?:space|memory) in /dev/shm\b"
            r"|\brequest exceeds memory available in /dev/shm\b"
            # Ray's object store sized past the container's /dev/shm.
            r"|\bobject store size \([^)\n]{1,40}\) exceeds /dev/shm size\b",
            _I,
        ),
    ),
)

REPORTED_HOST_OOM: tuple[Family, ...] = (
    # The memory cgroup's report: usage at the limit, and the limit hit (failcnt) at least
    # once. The swap line ("swap: usage … failcnt 0") is not read.
    Family(
        "memcg_limit_reached",
        "host_oom_killed",
        "high",
        _p(r"\bmemory: usage \d{1,20}kB, limit \d{1,20}kB, failcnt [1-9]\d{0,19}\b"),
    ),
    # systemd-oomd's own account of a kill, and systemd's for the unit.
    Family(
        "userspace_oom_killer",
        "host_oom_killed",
        "high",
        _p(
            r"systemd-oomd\[\d{1,10}\]: (?:Killed|oomd attempting to kill)\b"
            # systemd 248's wording of the same decision, just before the kill.
            r"|systemd-oomd\[\d{1,10}\]: Memory pressure for \S{1,300} is greater than \d"
            r"|\bsystemd-oomd killed \d{1,6} process"
            r"|\bMarked \S{1,300} for killing due to memory pressure"
            # systemd's result for a unit the kernel's OOM killer ended.
            r"|\.service: Failed with result '?oom-kill'?"
        ),
    ),
    # The userspace killer said, in a sentence, to have killed something: "oomd makes
    # arbitrary choices … `systemd-resolved` was killed". Its list of candidates alone is no
    # kill (it may then fail to kill any: "Failed to kill any cgroups" has no "was killed"),
    # nor is a kill denied, a conditional or a question.
    Family(
        "userspace_oom_killer",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:systemd-oomd|oomd|earlyoom)\b[^\n]{0,240}?\b(?:was|were|got|been|has|have|it)"
            r" killed\b",
            re.IGNORECASE,
        ),
        unless=_p(
            r"\b(?:didn't|did not|doesn't|does not|never|not) kill"
            r"|\b(?:if|whether|would|could|might)\b|\?",
            re.IGNORECASE,
        ),
    ),
    # What killed it, named by whatever saw the kill: systemd for a unit ("A process of this
    # unit has been killed by the OOM killer"), or a report of it. Not a guess at a cause.
    Family(
        "killed_by_oom_killer",
        "host_oom_killed",
        "high",
        _p(
            r"\b(?:has been|was|were|got|being|been|is|gets?) "
            r"(?:then |eventually |finally |immediately |quickly )?(?:killed|terminated) by "
            r"(?:the )?(?:Linux |kernel(?:'s)? )?OOM[- ]killer\b"
            r"|\bdied (?:to|from|of) the (?:Linux |kernel(?:'s)? )?OOM[- ]killer\b"
            # "serf was SIGKILLed (exit 137) by the kernel OOM killer".
            r"|\bSIGKILL(?:ed|'d)\b[^\n]{0,30}?\bby the (?:Linux |kernel(?:'s)? )?OOM[- ]killer\b",
            _I,
        ),
        # Not a guess, nor one item of a list of causes ("Some common causes include: (1) the
        # process was killed by the OOM killer ... (2) ray stop --force ...").
        unless=_p(
            r"\b(?:may|might|could|possibl\w{1,4}|probabl\w{1,4}|perhaps|if|whether)\b"
            r"|\bcauses? (?:include|are)\b",
            _I,
        ),
    ),
    # A batch scheduler or job runner that stopped the job for its memory: Slurm's and PBS's
    # wordings, and Moab's (TORQUE) hard limit, which it enforces by deleting the job.
    Family(
        "batch_scheduler_memory_kill",
        "host_oom_killed",
        "medium",
        _p(
            r"\bExceeded (?:step|job) memory limit\b|\bexceeded a memory resource limit\b"
            # HTCondor's and CMS's job wrappers: "Job killed by HTCondor due to excessive memory
            # use (RSS=2250 MB)", WMAgent's watchdog "Job has exceeded maxPSS: 16000 MB".
            r"|\bkilled by (?:HT)?Condor due to excessive memory\b"
            r"|\bJob has exceeded max(?:PSS|RSS|VSize): \d{1,9} ?[MG]B\b"
            r"|\bexceeded (?:MEM|memory|vmem|pmem) usage hard limit\b",
            _I,
        ),
    ),
    # Slurm's job state for a job its memory cgroup killed, as sacct, squeue or scontrol print
    # it (sacct cuts it to its column: OUT_OF_ME+). A token of its own, not part of a longer
    # name (CUDA_ERROR_OUT_OF_MEMORY is the GPU's).
    Family(
        "batch_scheduler_memory_kill",
        "host_oom_killed",
        "medium",
        _p(r"(?:JobState=|State=|^|[\s|`])OUT_OF_ME(?:MORY|\+)(?=[\s|`]|$)", re.MULTILINE),
    ),
    # The OOM killer's report without its kill line: the task table it prints (the only one
    # with an oom_score_adj column), its heading, and a memory cgroup's stats, which the
    # kernel prints only when that cgroup ran out.
    Family(
        "kernel_oom_report",
        "host_oom_killed",
        "medium",
        _p(
            r"\[\s{0,4}pid\s{0,4}\]\s{1,8}uid\s{1,8}tgid\s{1,8}total_vm\s{1,8}rss\b"
            r"[^\n]{0,80}?\boom_score_adj\b"
            r"|\bTasks state \(memory values in pages\)"
            r"|\bMemory cgroup stats for /"
        ),
    ),
    # The memory cgroup's own count of OOM kills (cgroup v2's memory.events, or vmstat's).
    Family(
        "memcg_oom_kill_count",
        "host_oom_killed",
        "high",
        _p(r"^\s{0,8}oom_kill [1-9]\d{0,9}\s*$", re.MULTILINE),
    ),
    # A notebook service that restarted the kernel for its memory (Colab).
    Family(
        "notebook_memory_limit",
        "host_oom_killed",
        "high",
        _p(
            r"\bcrashed after using all available RAM\b|\bused all available RAM\b"
            # Kaggle: "Your notebook tried to allocate more memory than is available."
            r"|\b(?:notebook|kernel|session)\b[^\n]{0,20}\btried to allocate more memory than"
            r" is available\b"
            # ... as Colab says it in Spanish: "se utiliza toda la RAM disponible".
            r"|\bse (?:ha )?utiliz(?:a|ado|ó) toda la RAM disponible\b"
            # ... in Korean ("사용 가능한 RAM을 모두 사용한 후 세션이 다운되었습니다"), Japanese
            # ("使用可能な RAM をすべて使用した後") and Chinese ("用尽了所有可用 RAM").
            r"|RAM\s?을 모두 사용한 후|RAM\s?をすべて使用した後|所有可用\s?RAM",
            _I,
        ),
    ),
    # Ray's report of the workers its memory monitor killed, when only its end is in the
    # log: how to move the kill threshold. Printed only after such kills.
    Family(
        "ray_memory_monitor",
        "host_oom_killed",
        "medium",
        _p(r"\bTo adjust the kill threshold, set the environment variable `?RAY_memory_usage_"),
    ),
    # A platform's own memory kill: Heroku stops a dyno far over its memory quota (R15);
    # Hugging Face Spaces stops a Space over its container's limit ("Memory limit exceeded
    # (16Gi)", "CPU Memory limit exceeded (16GB)").
    Family(
        "platform_memory_kill",
        "host_oom_killed",
        "high",
        _p(
            r"\bError R15 \(Memory quota vastly exceeded\)"
            r"|^\W{0,6}(?:CPU )?Memory limit exceeded \(\d{1,5} ?(?:[KMGT]i|[KMGT]B|[KMGT])\)"
            # ... and relayed in quotes as the Space's page shows it: 'The app shows "Runtime
            # error Memory limit exceeded (16Gi)"', 'It says "Memory limit exceeded".'
            r"|[\"'\u201c](?:Runtime error:? )?(?:CPU )?Memory limit exceeded"
            r"(?: \(\d{1,5} ?(?:[KMGT]i|[KMGT]B|[KMGT])\))?\.?[\"'\u201d]",
            re.MULTILINE,
        ),
    ),
    # TorchServe's answer when its worker's process memory ran out loading or running a model.
    Family(
        "platform_memory_kill",
        "host_oom_killed",
        "medium",
        _p(r"\b507 - System out of memory\b"),
    ),
    # A death and the host's memory named as its cause: "Actors died: CPU Out of Memory".
    Family(
        "host_memory_named",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:died|killed|crashed|terminated|exited)\W{1,4}(?:CPU|host|system RAM)"
            r" (?:is |was |went |ran )?Out of Memory\b",
            _I,
        ),
        unless=_p(r"\b(?:maybe|might|may|perhaps|probably|if|whether|or)\b|\?", _I),
    ),
    # Slurm's memory kill told in a sentence ("the jobs are killed because of a slurm
    # out-of-memory error"): Slurm enforces the job's host memory with its cgroup.
    Family(
        "batch_scheduler_memory_kill",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:slurm|sbatch|srun)(?:'s)? (?:out[- ]of[- ]memory|OOM)\b"
            # srun's and slurmstepd's own line for a step its cgroup ran out of memory.
            r"|\b(?:srun|slurmstepd): error: [^\n]{0,120}?\bOut Of Memory\b",
            _I,
        ),
        # Nor Slurm's flag beside exit 0:125 on a job that finished (nothing was killed).
        unless=_p(r"\b(?:GPU|VRAM|CUDA)\b|\b(?:if|when|whenever|in case)\b|\b0:125\b", _I),
    ),
    # Windows' commit limit: the paging file too small for what the process asked of it
    # (WinError 1455, "页面文件太小", "Auslagerungsdatei ist zu klein").
    Family(
        "host_allocation_refused",
        "host_oom_killed",
        "medium",
        _p(
            r"\bWinError 1455\b|\bThe paging file is too small\b|\berrno=1455\b"
            # ERROR_NOT_ENOUGH_MEMORY: "[WinError 8] Not enough memory resources are available".
            r"|\bWinError 8\]|\bNot enough memory resources are available to process this command"
            r"|\u9875\u9762\u6587\u4ef6\u592a\u5c0f|Auslagerungsdatei ist zu klein"
            # ... in Spanish, and as Rust's io::Error prints it ("(os error 1455)").
            r"|El archivo de paginaci\u00f3n es demasiado peque\u00f1o|\(os error 1455\)"
            # Windows' resource exhaustion detector and its popup: "Windows successfully
            # diagnosed a low virtual memory condition", "Windows - Out of Virtual Memory".
            r"|\bdiagnosed a low virtual memory condition\b|\bWindows - Out of Virtual Memory\b"
            r"|\bYour system is low on virtual memory\b",
            _I,
        ),
    ),
    # ... and the paging file's enlargement told as what cured it: "The simple solution was
    # increasing the Windows page file size to > 48GB". Not advice or a guess.
    Family(
        "host_allocation_refused",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:solution|fix|workaround) (?:was|is) (?:to )?(?:increas|enlarg|rais|expand"
            r"|extend)\w{0,4} (?:the )?(?:Windows )?(?:page|paging) file\b"
            r"|\b(?:increas|enlarg|rais|expand|extend)\w{0,4} (?:the )?(?:Windows )?(?:page|paging)"
            r" ?file\b[^\n]{0,60}?\b(?:fixed|solved|resolved) (?:it|this|the)\b"
            # "I had a low pagefile value. All fixed now."
            r"|\b(?:low|small|tiny) (?:page ?file|paging file)(?: value| size)?\b[^\n]{0,30}?"
            r"\b(?:fixed|solved|resolved)\b"
            # "I had to increase my pagefile to 50gb for it to work".
            r"|\bhad to (?:increas|enlarg|rais|expand|extend)\w{0,4} (?:my |the )?(?:Windows )?"
            r"(?:page|paging) ?file\b[^\n]{0,40}?\bfor it to (?:work|run|load|finish)\b",
            _I,
        ),
        unless=_p(r"\b(?:if|try|could|might|maybe|may|should|perhaps)\b", _I),
    ),
    # macOS's memory-pressure killer: "last exit reason = OS_REASON_JETSAM", "jetsam under
    # memory pressure".
    Family(
        "userspace_oom_killer",
        "host_oom_killed",
        "medium",
        _p(
            r"\bOS_REASON_JETSAM\b|\bjetsam(?:med)?\b[^\n]{0,40}?\bmemory pressure\b"
            # ... its report of a mass kill when the compressor is full.
            r"|\bjetsam\b[^\n]{0,40}?\bvm-compressor-space-shortage\b"
            # ... and the kernel's memorystatus line when it kills for memory: "memorystatus:
            # killing largest compressed process python3.11 [5844] 43350 MB".
            r"|\bmemorystatus: killing (?:largest compressed|top|idle) process\b"
            # A userspace killer named in a sentence: "killed by `systemd-oomd`".
            r"|\bkilled by [`'\"]?(?:systemd-oomd|earlyoom|oomd|nohang)\b"
            # ... or as the subject: "oomd kill even my DE process".
            r"|\b(?:systemd-)?oomd (?:kills?|killed|terminated)\b"
            # earlyoom's own line when it acts: "Out of memory! avail: 0 MiB < min: 587 MiB".
            r"|\bOut of memory! avail: \d{1,9} MiB < min: \d{1,9} MiB\b"
            # Cray's node health: "under_oom detected for 5 seconds ... re-enabling OOM killer".
            r"|\bunder_oom detected\b"
            # iOS's memory limit, as Xcode's debugger reports the kill: "Terminated due to
            # memory issue", "has been killed by the operating system because it is using too
            # much memory".
            r"|\bTerminated due to memory issue\b"
            r"|\bkilled by the operating system because it is using too much memory\b",
            _I,
        ),
    ),
    # The kernel's memory report that the OOM killer prints before it picks a victim, read
    # from the node's log: "kernel: Free swap  = 0kB".
    Family(
        "kernel_oom_report",
        "host_oom_killed",
        "medium",
        _p(r"\bkernel: Free swap\s{1,4}= 0kB\b"),
    ),
    # The 2.6.x kernel's victim line: "Killed process 11726, UID 498, (mysqld) total-vm:".
    Family(
        "kernel_oom_killer",
        "host_oom_killed",
        "high",
        _p(
            r"\bKilled process \d{1,10}, UID \d{1,10}, \([^)\n]{1,64}\) total-vm:"
            # FreeBSD's: "pid 41663 (sliod), uid 0, was killed: out of swap space" (and its
            # newer reasons, "failed to reclaim memory", "a thread waited too long ...").
            r"|\bpid \d{1,10} \([^)\n]{1,64}\), (?:jid \d{1,10}, )?uid \d{1,10}, was killed: "
            r"(?:out of swap space|failed to reclaim memory|a thread waited too long to "
            r"allocate a page)"
        ),
    ),
)

# A scheduler's line about a task it saw die of SIGKILL, with nothing about why.
REPORTED_SIGKILL = (
    r"|\b(?:srun|yhrun): error: \S{1,120}: tasks? [\d,-]{1,40}: Killed\b"
    r"|\bWTERMSIG 9\b|\bkilled by (?:an )?unknown signal\b"
)


# A memory cgroup's files read by hand (cgroup v1): a usage, or the peak usage, at its limit.
_MEMCG_FILE = _p(r"\bmemory\.(max_usage|usage|limit)_in_bytes\b[^\d\n]{0,40}(\d{4,20})?")
_NUMBER_LINE = _p(r"^\s{0,8}(\d{4,20})\s*$")
_NO_LIMIT = 1 << 60  # cgroup v1 writes "no limit" as a page-rounded 2^63 - 1
MEMCG_FILES = Family(
    "memcg_usage_at_limit",
    "host_oom_killed",
    "medium",
    _MEMCG_FILE,
)


def memcg_files_at_limit(lines: list[str]) -> tuple[str, ...]:
    """The lines where a cgroup's usage_in_bytes (or max_usage) reads at least its
    limit_in_bytes: the value on the same line, or alone on the next (`cat file` output)."""
    usage: tuple[int, str] | None = None
    limit: tuple[int, str] | None = None
    for i, line in enumerate(lines):
        if "_in_bytes" not in line:
            continue
        for m in _MEMCG_FILE.finditer(line):
            value = m.group(2)
            if value is None and i + 1 < len(lines):
                following = _NUMBER_LINE.match(lines[i + 1])
                value = following.group(1) if following else None
            if value is None:
                continue
            number = int(value)
            if m.group(1) == "limit":
                limit = (number, line)
            elif usage is None or number > usage[0]:
                usage = (number, line)
    if usage is None or limit is None or limit[0] >= _NO_LIMIT or usage[0] < limit[0]:
        return ()
    return tuple(dict.fromkeys((usage[1], limit[1])))
