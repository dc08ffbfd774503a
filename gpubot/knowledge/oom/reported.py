"""Memory failures told by whatever reported them, not in the framework's usual sentence.

A GPU out of memory may reach the log only as an exception's header, an allocator's warning,
a driver status code or a framework's failed check; a host kill as the words of whatever did
the killing (systemd-oomd, a batch scheduler, a notebook service, the memory cgroup's own
report, an old kernel's victim line); a full /dev/shm as a server's shared-memory pool or key
that could not grow; a SIGKILL as the scheduler's line about the task. Each family here reads
one such reporter. Patterns follow the bounds of oom_families: literals and bounded repeats.
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
            r"|\bkIOGPUCommandBufferCallbackErrorOutOfMemory\b",
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
    # What killed it, named by whatever saw the kill: systemd for a unit ("A process of this
    # unit has been killed by the OOM killer"), or a report of it. Not a guess at a cause.
    Family(
        "killed_by_oom_killer",
        "host_oom_killed",
        "high",
        _p(r"\b(?:has been|was|were|got) killed by the (?:kernel(?:'s)? )?OOM[- ]killer\b", _I),
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
            r" is available\b",
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
    # An operator's sentence that a pod or process ran out of memory and was killed: "the
    # exporter pod runs out of memory about every hour and is killed with code 137". Not when
    # the GPU is what ran out, and not a conditional ("if the pod runs out of memory ...").
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:pod|container|process|job|task|worker)s?\b[^\n]{0,60}?"
            r"\b(?:runs?|ran|running) out of memory\b[^\n]{0,120}?"
            r"\b(?:killed|OOMKilled|exit(?:s|ed)? with (?:code |status )?137)\b",
            _I,
        ),
        unless=_p(
            r"\b(?:GPU|CUDA|VRAM)\b[^\n]{0,20}?\bout of memory\b"
            r"|\b(?:if|when|whenever|once|in case)\b[^\n]{0,40}?\b(?:runs?|ran) out of memory\b",
            _I,
        ),
    ),
    # An operator who brought the OOM about by setting a container's memory ("reducing the
    # memory to 500Mi ... can reproduce the OOM error"), beside the kill's exit code 137.
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:reduc|lower|decreas|limit|set)\w{0,4}\b[^\n]{0,30}?\bmemory\b[^\n]{0,20}?"
            r"\b(?:to|of|at) \d{1,6} ?(?:[KMG]i|[KMG]iB|[KMG]B)\b[^\n]{0,80}?\bOOM\b"
            r"|\bOOM\b[^\n]{0,80}?\b(?:reduc|lower|decreas|limit|set)\w{0,4}\b[^\n]{0,30}?"
            r"\bmemory\b[^\n]{0,20}?\b(?:to|of|at) \d{1,6} ?(?:[KMG]i|[KMG]iB|[KMG]B)\b",
            _I,
        ),
        near=_p(r"\bexit ?Code:? 137\b|\bexit(?:ed)? (?:with )?(?:code |status )?137\b", _I),
        span=30,
        unless=_p(
            r"\b(?:GPU|CUDA|VRAM)\b[^\n]{0,30}?\bOOM\b|\bOOM\b[^\n]{0,30}?\b(?:GPU|CUDA)\b", _I
        ),
    ),
    # A kill that giving the container more memory cured: "I solved this 'killed' problem by
    # adding --memory=\"16g\" to the docker command".
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:solved|fixed|resolved|cured)\b[^\n]{0,60}?\bkill(?:ed|s)?\b[^\n]{0,100}?"
            r"(?:--memory|--memory-limit|\bmem_limit)\s{0,2}[= :]\s{0,2}[\"']?\d{1,6}\s?[kKmMgG]",
            _I,
        ),
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
            r"|^\W{0,6}(?:CPU )?Memory limit exceeded \(\d{1,5} ?(?:[KMGT]i|[KMGT]B|[KMGT])\)",
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
    # An out-of-memory and the SIGKILL it brought, in one sentence: "an 'OutOfMemory' issue,
    # resulting in the process being killed by SIGKILL (signal 9)".
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:OutOfMemory|out[- ]of[- ]memory|OOM)\b[^\n]{0,80}?"
            r"\b(?:killed by (?:SIGKILL|signal 9)|SIGKILL(?:ed)?\b)",
            _I,
        ),
        unless=_p(
            r"\b(?:GPU|VRAM|CUDA)\b|\b(?:maybe|might|may|perhaps|probably|if|whether)\b|\?", _I
        ),
    ),
    # RAM watched climbing past its size beside the kill: "the training was interrupted when
    # the memory was over 100%" a few lines from "exit code 137".
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:RAM|memory)\b[^\n]{0,30}?\b(?:over|above|reached|hit|at) 100 ?%"
            # ... or the memory left falling to nothing: "dropping to 0% available memory".
            r"|\b(?:dropping|dropped|drops|fell|falls|falling|down) to 0 ?% (?:available|free)\b",
            _I,
        ),
        near=_p(r"\bSIGKILL\b|\bsignal:? 9\b|\bexit code:? (?:137|-9)\b|\bKilled\b", _I),
        span=8,
        unless=_p(r"\b(?:GPU|VRAM|CUDA|video)\b|\b(?:if|maybe|might|may)\b", _I),
    ),
    # A cgroup limit crossed and the kill, told in one sentence: "total RSS crosses the cgroup
    # limit and the kernel SIGKILLs the pod with exit 137".
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:RSS|memory|usage)\b[^\n]{0,40}?\b(?:crosses|crossed|exceeds|exceeded|hits|hit"
            r"|reaches|reached) (?:the |its )?(?:cgroup|container|pod)(?:'s)? (?:memory )?limit\b"
            r"[^\n]{0,80}?(?:\bSIGKILL|\bkill(?:s|ed)?\b|\b137\b|\bOOM)",
            _I,
        ),
        unless=_p(r"\b(?:GPU|VRAM|CUDA)\b[^\n]{0,20}?\bmemory\b|\b(?:if|whenever)\b", _I),
    ),
    # A notebook service's words for its RAM used up: "it says ran out of RAM".
    Family(
        "notebook_memory_exhausted",
        "host_oom_killed",
        "medium",
        _p(r"\b(?:ran|runs|running) out of (?:RAM|system RAM|system memory|host memory)\b"),
    ),
    # RAM filled up, and the notebook or process crashing or killed in the same sentence:
    # "the ram usage is maxed and the notebook crashes".
    Family(
        "notebook_memory_exhausted",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:RAM|system memory|host memory)(?: usage)? (?:is |was |gets |got |goes |went )?"
            r"(?:maxed|full|at 100 ?%|100 ?%)[^\n]{0,60}?"
            r"\b(?:crash\w{0,3}|killed|dies|died|restart\w{0,3})\b",
            _I,
        ),
        # Not the card's RAM ("GPU RAM is full"), nor advice ("if the RAM is full ...").
        unless=_p(
            r"\b(?:GPU|VRAM|video|CUDA)\s?(?:RAM|memory)\b|\bif (?:the )?(?:RAM|memory)\b", _I
        ),
    ),
    # What a host's log said of a SIGKILL, told beside it: "the pycharm tips are 'interrupted
    # by signal 9: sigkill'. I check my log in linux and it said cpu out of memory", "the
    # system logs indicate that the process is terminated due to insufficient memory".
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:logs?|dmesg|journal(?:ctl)?|syslog|kern\.log)\b[^\n]{0,60}?"
            r"\b(?:said|says|say|shows?|showed|indicates?|indicated|reports?|reported)\b"
            r"[^\n]{0,40}?(?:\b(?:CPU|RAM|host|system) (?:is |was |went |ran )?out of memory\b"
            r"|\b(?:terminated|killed) (?:due to|because of|for) (?:insufficient|not enough"
            r"|lack of|low) (?:memory|RAM)\b)",
            _I,
        ),
        near=_p(
            r"\bSIGKILL\b|\bsignal:? 9\b|exitcode:? -9\b|\bexit code:? (?:137|-9)\b|\bKilled\b",
            _I,
        ),
        span=8,
        # Not the card's memory, nor a guess at the cause.
        unless=_p(
            r"\b(?:GPU|VRAM|CUDA)\b[^\n]{0,20}?\bout of memory"
            r"|\b(?:maybe|might be|may be|perhaps|probably|if)\b[^\n]{0,40}?"
            r"\b(?:out of memory|insufficient memory)",
            _I,
        ),
    ),
    # A kill by the orchestrator told with its cause in one sentence: "Container is killed by
    # Kubernetes when memory crosses the defined limit".
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(
            r"\bkilled by (?:Kubernetes|k8s|the kubelet|kubelet|Docker|the container runtime)\b"
            r"[^\n]{0,40}?\b(?:when|as|because|once)\b[^\n]{0,20}?\bmemory\b[^\n]{0,20}?"
            r"\b(?:crosses|crossed|exceeds|exceeded|goes over|went over|hits|hit|reaches|reached)"
            r" (?:the |its )?(?:defined |configured |set |memory )?limit\b",
            _I,
        ),
        unless=_p(r"\b(?:GPU|VRAM|CUDA)\b[^\n]{0,20}?\bmemory\b", _I),
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
        unless=_p(r"\b(?:GPU|VRAM|CUDA)\b|\b(?:if|when|whenever|in case)\b", _I),
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
            r"|\u9875\u9762\u6587\u4ef6\u592a\u5c0f|Auslagerungsdatei ist zu klein",
            _I,
        ),
    ),
    # A pod or worker killed because of an OOM, said in a sentence: "When a POD gets killed
    # by K8S because of OOM", "worker crashes due to out of memory (OOME)".
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:pod|container|worker|process|task|job)s?\b[^\n]{0,40}?"
            r"\b(?:killed|crash(?:es|ed)?|dies|died|terminated)\b[^\n]{0,40}?"
            r"\b(?:because of|due to) (?:an? )?(?:OOM|OOME|out of memory)\b"
            # ... or the other way round: "running out of memory and causing python processes
            # getting killed".
            r"|\b(?:(?:run(?:ning|s)?|ran) out of memory|(?:memory|RAM) is not enough)\b"
            r"[^\n]{0,60}?"
            r"\b(?:causing|and|which|then|so)\b[^\n]{0,40}?\b(?:gets?|getting|got|being|been|be)"
            r" killed\b"
            # ... or with what killed it first: "when OS kill uwsgi because of OOM".
            r"|\b(?:the )?(?:OS|kernel|system|Linux|kubelet|Kubernetes|k8s|Docker)"
            r" (?:kills?|killed|killing)\b[^\n]{0,40}?\b(?:because of|due to) (?:an? )?"
            r"(?:OOM|OOME|out of memory)\b",
            _I,
        ),
        unless=_p(
            r"\b(?:GPU|CUDA|VRAM)\b|\b(?:if|when(?!ever)|in case)\b[^\n]{0,20}?\b(?:it|the)\b"
            r"[^\n]{0,30}?\bmight\b|\b(?:could|might|may) be\b",
            _I,
        ),
    ),
    # The kernel's OOM reaper named as what stopped the work, or its lines seen in the syslog
    # ("jobs are stopped by `oom_reaper`", "lots of `oom_reaper` messages"): it frees the
    # memory of a process the OOM killer has just killed.
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:stopped|killed|terminated|reaped) by [`'\"]?oom_reaper\b"
            # ... or a count of what a limit OOM-killed: "640Mi OOM-killed 39 mounts".
            r"|\bOOM[- ]killed (?:\d{1,6}|several|many|multiple|dozens of|hundreds of) \w"
            r"|\boom_reaper[`'\"]? (?:messages|lines|entries|logs?)\b",
            _I,
        ),
    ),
    # The host's memory named as the cause, in a sentence: "I can confirm that the error is
    # caused by CPU OOM", "Root cause: host cgroup OOM, not VRAM". The card's memory may be
    # named too (as what it was not); a hedge is not a cause.
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:is|was|were) caused by (?:a |an |the )?(?:CPU|host|system|RAM|container|cgroup)"
            r"(?: memory| RAM| cgroup)? (?:OOM|out of memory)\b"
            r"|\broot cause\W{1,6}(?:(?:is|was) )?(?:a |an |the )?(?:host|container|node|system)"
            r"(?: cgroup| memory)? (?:OOM|out of memory)\b"
            # "This is the kernel OOM killer, not a compiler bug", "exited with return code -9
            # due to RAM", "because of a lack of RAM".
            r"|\b(?:this|it) (?:is|was) the (?:kernel(?:'s)? |Linux )?OOM[- ]killer\b"
            r"|\b(?:code|status) (?:-9|137) due to RAM\b"
            r"|\b(?:because of|due to) (?:a )?lack of RAM\b",
            _I,
        ),
        unless=_p(r"\b(?:if|whether|might|may|could|maybe|probably|perhaps|check)\b", _I),
    ),
    # macOS's memory-pressure killer: "last exit reason = OS_REASON_JETSAM", "jetsam under
    # memory pressure".
    Family(
        "userspace_oom_killer",
        "host_oom_killed",
        "medium",
        _p(
            r"\bOS_REASON_JETSAM\b|\bjetsam(?:med)?\b[^\n]{0,40}?\bmemory pressure\b"
            # A userspace killer named in a sentence: "killed by `systemd-oomd`".
            r"|\bkilled by [`'\"]?(?:systemd-oomd|earlyoom|oomd|nohang)\b"
            # Cray's node health: "under_oom detected for 5 seconds ... re-enabling OOM killer".
            r"|\bunder_oom detected\b",
            _I,
        ),
    ),
    # The 2.6.x kernel's victim line: "Killed process 11726, UID 498, (mysqld) total-vm:".
    Family(
        "kernel_oom_killer",
        "host_oom_killed",
        "high",
        _p(r"\bKilled process \d{1,10}, UID \d{1,10}, \([^)\n]{1,64}\) total-vm:"),
    ),
)

# A kill that more memory cured, told by whoever ran the job: "I resized to 8gb and it
# worked", "solved this problem by expanding memory space of my container", "completed with
# a limit of 750M". Evidence only beside a kill (SIGKILL, 137, Killed): the verdict reads it
# there and nowhere else. Not the card's memory, and not a cure that failed.
MEMORY_CURE = Family(
    "kill_cured_by_more_memory",
    "host_oom_killed",
    "medium",
    _p(
        r"\b(?:resiz|increas|rais|expand|bump|upgrad|doubl|mov|switch)(?:ed|ing)\b[^\n]{0,60}?"
        r"\b(?:memory|RAM|mem|swap|\d{1,5} ?(?:[GM]i?B|gb|mb|[GM]))\b[^\n]{0,60}?"
        r"\b(?:(?:and |then )?(?:it |that |everything )?(?:worked|works|succeeded|completed"
        r"|finished|went through|passed)|fixed (?:it|this|the)|solved (?:it|this|the))\b"
        r"|\b(?:solved|fixed|resolved)\b[^\n]{0,40}?\bby (?:expanding|increasing|raising"
        r"|adding|giving|allocating|bumping|doubling|upgrading)\b[^\n]{0,40}?\b(?:memory|RAM)\b"
        r"|\b(?:completed|worked|works|succeeded|finished|passed|went through)\b[^\n]{0,80}?"
        r"\bwith (?:a |the )?(?:memory |RAM )?limit of \d{1,6} ?[KMG]i?B?\b"
        # "The error vanished after I upgraded my system with additional RAM".
        r"|\b(?:vanished|went away|disappeared|was gone|stopped)\b[^\n]{0,20}?\bafter\b[^\n]{0,40}?"
        r"\b(?:upgrad|add|increas|doubl|expand)\w{0,4}\b[^\n]{0,40}?\b(?:RAM|memory)\b"
        # ... in Chinese: "32G改为64G问题就解决了" (32G changed to 64G, the problem went away).
        r"|\d{1,4} ?[GM]B?\s?(?:改为|改成|换成|換成|加到|增加到|升级到|升級到|提高到)"
        r"\s?\d{1,4} ?[GM]B?[^\n]{0,20}?(?:解决|解決|好了|可以了|正常)",
        _I,
    ),
    unless=_p(
        r"\b(?:GPU|VRAM|CUDA)\b|\b(?:didn't|did not|doesn't|does not|still|not|no longer)\b"
        r"|显存|顯存|还是|還是|没有|沒有",
        _I,
    ),
)

# A scheduler's line about a task it saw die of SIGKILL, with nothing about why.
REPORTED_SIGKILL = (
    r"|\bsrun: error: \S{1,120}: tasks? [\d,-]{1,40}: Killed\b"
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
