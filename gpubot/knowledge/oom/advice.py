"""What to do about each kind of memory failure: fitted to the workload, sized from its numbers."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from gpubot.knowledge.oom.allocator_numbers import AllocatorNumbers, GiB
from gpubot.knowledge.oom.scan import lines_matching
from gpubot.knowledge.oom.verdict import TOLD_ON_THE_CARD, TOLD_ON_THE_HOST, Facts, Verdict

Workload = Literal["training", "inference_server", "data_loader", "unknown"]

_INFERENCE = re.compile(
    r"vllm|LLMEngine|gpu[_-]memory[_-]utilization|KV cache|max[_-]model[_-]len|sglang"
    r"|mem-fraction-static|text[-_]generation[-_](?:inference|server)|tritonserver"
    r"|tensorrt_llm|TensorRT-LLM|/v1/(?:chat/)?completions",
    re.ASCII | re.IGNORECASE,
)
_DATA_LOADER = re.compile(
    r"DataLoader|num_workers|_worker_loop|torch/utils/data|worker \(pid", re.ASCII
)
_TRAINING = re.compile(
    r"\.backward\(|backward\(\)|optimizer|\bloss\b|\bepoch\b|\btrain(?:ing|er)?\b|deepspeed"
    r"|accelerate|\bFSDP\b|\.fit\(|gradient",
    re.ASCII | re.IGNORECASE,
)
# The message's own advice ("If reserved but unallocated memory is large try setting ...").
_HINT = re.compile(
    r"(?:If reserved (?:but unallocated )?memory is|Try (?:increasing|decreasing|setting)"
    r"|Please try to raise|Decrease GPU memory utilization|If the cause is memory fragmentation"
    r"|For debugging consider passing|Compile with `?TORCH_USE_CUDA_DSA"
    r"|Please try to increase --mem-fraction-static|add report_tensor_allocations_upon_oom)"
    r"[^\n]{0,240}?(?:\.(?=\s|$)|$)",
    re.ASCII | re.MULTILINE,
)
_CLASSES_WITH_SERVER_ADVICE = ("cuda_oom", "cuda_oom_fragmentation")


def _lines(text: str | Sequence[str]) -> Sequence[str]:
    return text.splitlines() if isinstance(text, str) else text


def workload(text: str | Sequence[str], cls: str, family: str = "") -> Workload:
    """Which kind of job failed, from what its log (text or lines) mentions (an inference
    server first)."""
    lines = _lines(text)
    if family == "inference_kv_cache" or lines_matching(_INFERENCE, lines):
        return "inference_server"
    loader = bool(lines_matching(_DATA_LOADER, lines))
    if cls in ("shm_exhausted", "killed_unknown", "host_oom_killed") and loader:
        return "data_loader"
    if loader or lines_matching(_TRAINING, lines):
        return "training"
    return "unknown"


def hints(text: str | Sequence[str]) -> tuple[str, ...]:
    """The failing message's own suggestions (in text or lines), whole sentences, at most
    three."""
    found = dict.fromkeys(
        m.group(0).strip()
        for line in lines_matching(_HINT, _lines(text))
        for m in _HINT.finditer(line)
    )
    return tuple(found)[:3]


def _gib(value: int) -> str:
    """A size as people read it: MiB under a GiB, GiB above."""
    if value < GiB:
        return f"{value / 1024**2:.0f} MiB"
    return f"{value / GiB:.2f} GiB"


def _processes(n: AllocatorNumbers) -> list[str]:
    """Who else holds the GPU: PyTorch lists the GPU's processes by host PID, and a container
    cannot see its own host PID, so "Process N has X in use" is usually the job itself."""
    if not n.processes:
        return []
    own = n.own_reserve()
    listed = sum(size.value for _, size in n.processes)
    if own is not None:
        others = [(pid, s) for pid, s in n.processes if abs(s.value - own) > max(GiB, own // 10)]
        if not others:
            pid, size = n.processes[0]
            return [
                f"Process {pid} ({_gib(size.value)}) is this job itself (its allocator holds "
                f"{_gib(own)}; a container sees host PIDs, so PyTorch cannot name itself): the "
                "GPU is full of the job's own memory, not a neighbour's."
            ]
        other = sum(s.value for _, s in others)
        return [
            f"Processes other than this one hold {_gib(other)} of the GPU: another rank of "
            "the same job on the same GPU, a previous instance that did not exit, or a pod "
            "sharing the GPU by time-slicing (give this job a whole GPU or its own MIG slice)."
        ]
    return [
        f"The GPU lists processes holding {_gib(listed)}: usually that is this job itself (a "
        "container sees host PIDs). Only if `nvidia-smi` on the node shows other pods' "
        "processes is it a neighbour: then give this job a whole GPU or its own MIG slice."
    ]


def _too_big(n: AllocatorNumbers) -> list[str]:
    if n.requested is None or n.total is None or n.requested.value <= n.total.value:
        return []
    return [
        f"One allocation ({_gib(n.requested.value)}) is larger than the whole GPU "
        f"({_gib(n.total.value)}): the model cannot fit as is; quantise it (8/4-bit) or shard "
        "it with tensor parallelism across GPUs."
    ]


def _server(verdict: Verdict) -> list[str]:
    startup = verdict.family == "inference_kv_cache" and any(
        "less than desired GPU memory" in line for line in verdict.lines
    )
    advice = []
    if startup:
        advice.append(
            "vLLM checks at start-up that --gpu-memory-utilization x the GPU is free: another "
            "process (often a previous server that did not exit, or a second replica on the "
            "same GPU) holds the rest. Free the GPU, or lower --gpu-memory-utilization to the "
            "share that is really free."
        )
    advice += [
        "Inference server: the weights take a fixed share and the KV cache gets what "
        "--gpu-memory-utilization leaves; lower --max-model-len (the longest context it must "
        "hold) and --max-num-seqs so the KV cache fits, or raise --gpu-memory-utilization "
        "(e.g. 0.90 -> 0.95) when nothing else uses the GPU.",
        "If the weights alone do not fit: a quantised checkpoint (FP8, AWQ, GPTQ) or "
        "--tensor-parallel-size N across N GPUs; batch size and gradient tricks do not apply.",
    ]
    return advice


def _training() -> list[str]:
    return [
        "Lower the per-GPU batch size; keep the effective batch with gradient accumulation.",
        "Trade compute for memory with activation checkpointing and mixed precision (bf16/fp16).",
        "If the model still does not fit, shard optimizer state and weights (FSDP, DeepSpeed "
        "ZeRO) or the model itself (tensor/pipeline parallelism), or quantise it.",
    ]


def _cuda_oom(verdict: Verdict, facts: Facts, kind: Workload) -> list[str]:
    n = facts.numbers
    body = _server(verdict) if kind == "inference_server" else _training()
    return [*_too_big(n), *body, *_processes(n)]


def _fragmentation(verdict: Verdict, facts: Facts, kind: Workload) -> list[str]:
    n = facts.numbers
    idle, wanted = n.idle_reserve, n.requested
    assert idle is not None  # the verdict rests on both numbers
    assert wanted is not None
    setting = (
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
        if n.idle_reserve_from.startswith("reserved by PyTorch")
        # The 1.x wordings: expandable segments came with PyTorch 2.1.
        else "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 (expandable_segments:True once "
        "on PyTorch 2.1+)"
    )
    advice = [
        f"{_gib(idle.value)} was reserved by the allocator but unused ({n.idle_reserve_from}) "
        f"when {_gib(wanted.value)} was refused: the memory exists but in pieces. Set "
        f"{setting} in the pod's env.",
        "Avoid tensors whose shapes change every step (pad or bucket sequence lengths); "
        "torch.cuda.empty_cache() between phases (e.g. train and eval) releases idle blocks.",
    ]
    if kind == "inference_server":
        advice += _server(verdict)[-2:-1]
    return [*advice, *_processes(n)]


def _host(verdict: Verdict, facts: Facts, kind: Workload) -> list[str]:
    n = facts.numbers
    peak = n.killed_rss
    sized = f" above the observed peak of {_gib(peak)} (add ~20% headroom)" if peak else ""
    was = f" (it was {_gib(n.cgroup_limit)})" if n.cgroup_limit else ""
    advice = []
    if verdict.family == "host_allocation_refused":
        advice.append(
            "The kernel refused a host allocation (ENOMEM) rather than killing the process: "
            "the container's memory limit or the node's RAM was reached (or a ulimit -v / "
            "overcommit setting). A single request of many GiB is more often a wrong shape "
            "than a limit to raise."
        )
    advice.append(
        f"Raise the container's memory limit{sized}{was}; set requests equal to limits so "
        "the pod is not the first evicted under node memory pressure.",
    )
    if kind == "data_loader":
        advice.append(
            "Each DataLoader worker holds its own copy of what the dataset object holds: "
            "fewer num_workers, no whole-dataset preloading, memory-map large files."
        )
    elif kind == "inference_server":
        advice.append(
            "Inference server: host RAM holds the weights while loading and the CPU swap "
            "space (vLLM --swap-space, default 4 GiB per GPU): lower --swap-space or load "
            "from safetensors so the weights are memory-mapped."
        )
    else:
        advice.append(
            "Cut host memory: fewer DataLoader workers, no whole-dataset preloading, "
            "memory-map large files; check for a leak if usage grew over time."
        )
    advice.append("This is host RAM, not GPU memory: GPU batch size changes will not fix it.")
    return advice


def _shm(shm_bytes: int | None) -> list[str]:
    size_gib = max(1, -(-4 * shm_bytes // GiB)) if shm_bytes else 8
    now = f" (it is {_gib(shm_bytes)} now)" if shm_bytes else ""
    return [
        f"Mount an emptyDir with medium: Memory at /dev/shm, sizeLimit: {size_gib}Gi{now}; "
        "it counts against the pod's memory limit, so raise that too.",
        "Or lower DataLoader num_workers (0 avoids shared memory entirely); for NCCL, "
        "NCCL_SHM_DISABLE=1 falls back to slower transports.",
    ]


FIND_OUT = (
    "The process was killed with SIGKILL and nothing in the log says who sent it: "
    "out-of-memory is only one of the causes (liveness probe, eviction, preemption, a "
    "scheduler's time limit, a person).",
    "`kubectl describe pod <pod>`: Last State Reason OOMKilled means the container's memory "
    "cgroup; Error with exit code 137 means something else sent the SIGKILL.",
    "`kubectl get events --field-selector involvedObject.name=<pod>`: Unhealthy/Killing "
    "(liveness probe), Evicted (node pressure), Preempting/Preempted (priority).",
    "Kernel log on the node at that time: `journalctl -k | grep -iE 'oom|killed process'` "
    "(or `dmesg -T`) names the OOM killer's victim if there was one.",
)

CANNOT_TELL = (
    "The log speaks of memory (the lines above) but in no words that say which memory ran out, "
    "or whether that is what ended the process: it cannot tell, so it does not say 'not an "
    "OOM' either.",
    "`kubectl describe pod <pod>`: Last State reason and exit code (OOMKilled is the memory "
    "cgroup; 137 is a SIGKILL from someone); the pod's events (Evicted, OOMKilling).",
    "Kernel log on the node around the death: `journalctl -k | grep -iE 'oom|killed process'` "
    "names the OOM killer's victim and its cgroup if there was one.",
    "The container's memory working set against its limit, and the GPU's framebuffer use "
    "(DCGM_FI_DEV_FB_USED) just before the death; the pod's /dev/shm size.",
)

UNEXPLAINED_BESIDE = (
    "The log also speaks of memory (the lines cited after this failure's) in words this "
    "failure does not account for: it may not be the whole story, so this is not a confident "
    "'not an OOM'.",
    *CANNOT_TELL[1:],
)

OTHER: dict[str, tuple[str, ...]] = {
    "device_side_assert": (
        "A kernel assertion failed, almost always an index out of range: a class label >= "
        "num_classes (or negative) in a loss, a token id >= the embedding's vocabulary size "
        "(tokenizer and model mismatch), an out-of-range gather/scatter index.",
        "Rerun with CUDA_LAUNCH_BLOCKING=1 (and TORCH_USE_CUDA_DSA) to see the failing op, "
        "or run one batch on CPU for a readable error. More memory will not help.",
    ),
    "illegal_memory_access": (
        "A kernel read or wrote outside its memory: a bug in a custom or fused kernel or a "
        "library (attention kernels, Triton, NCCL), a CUDA/driver/library version mismatch, "
        "or a hardware fault.",
        "Rerun with CUDA_LAUNCH_BLOCKING=1 and compute-sanitizer to find the kernel; check the "
        "node's kernel log for XID 13/31/43 (`gpubot xid parse`): repeats on the same GPU point "
        "to hardware (run DCGM diagnostics). Not a shortage of memory.",
    ),
    "nccl_timeout": (
        "A collective failed or waited past its timeout: usually one rank stalled or died "
        "first (find the earliest error on any rank), a network/InfiniBand problem, or ranks "
        "calling different collectives.",
        "Set NCCL_DEBUG=INFO and TORCH_NCCL_TRACE_BUFFER_SIZE to see which rank hung; not an "
        "out-of-memory failure.",
    ),
    "driver_mismatch": (
        "The node's driver is older than the image's CUDA runtime (or no GPU is visible): use "
        "an image built for the node's driver (`nvidia-smi` shows the newest CUDA it supports), "
        "upgrade the driver, or check the pod requests nvidia.com/gpu.",
    ),
    "gpu_xid": (
        "The GPU itself reported an error (an XID, or it fell off the bus): `gpubot xid parse` "
        "on the node's kernel log and `gpubot xid explain N` say what to do; not memory.",
    ),
    "kernel_shared_memory_limit": (
        "A GPU kernel asked for more on-chip shared memory per block than this GPU has (a "
        "compiler or autotuner setting): not /dev/shm and not GPU memory. Lower the kernel's "
        "block sizes or num_stages, or use a build that supports this GPU generation.",
    ),
    "java_heap": (
        "The JVM hit its own heap limit: raise -Xmx (or -XX:MaxRAMPercentage in a container); "
        "the container was not OOM-killed and GPU memory is not involved.",
    ),
    "runtime_heap_limit": (
        "The language runtime hit its own heap cap (V8's --max-old-space-size): raise it "
        "(NODE_OPTIONS=--max-old-space-size=N); the container was not OOM-killed.",
    ),
    "oom_killer_failed": (
        "A userspace OOM killer (systemd-oomd) tried to kill and could not: nothing was killed "
        "for memory. If the workload died, look for what else stopped it; if memory pressure "
        "persists, check the unit's ManagedOOM settings and the kernel log for its own OOM kill.",
    ),
    "shared_memory_not_full": (
        "Shared memory failed for a reason other than space: too many open descriptors "
        "(raise ulimit -n, or torch.multiprocessing.set_sharing_strategy('file_system')), a "
        "segment already gone (a peer that exited or a version mismatch), or a call a signal "
        "interrupted. A larger /dev/shm will not help.",
    ),
    "allocation_invalid_argument": (
        "The allocation was refused as an invalid argument (EINVAL), not for want of memory: "
        "check the size and flags passed (pinned memory and its driver support, a size of 0 or "
        "past a limit).",
    ),
    "shm_segment_over_kernel_limit": (
        "The kernel refused a System V shared memory segment larger than it allows (SHMMAX, "
        "SHMALL): raise kernel.shmmax/kernel.shmall, or ask for less (PostgreSQL's "
        "shared_buffers). Nothing ran out; a larger /dev/shm will not help.",
    ),
    "database_lock_table_full": (
        'PostgreSQL\'s "out of shared memory" is its lock table full, not memory that ran '
        "out: raise max_locks_per_transaction (or lock fewer objects per transaction; pg_dump "
        "locks every table it dumps). A larger /dev/shm or memory limit will not help.",
    ),
    "application_memory_cap": (
        "A program refused work at its own memory cap (Redis maxmemory, memcached -m, "
        "ClickHouse's max_server_memory_usage or a query's max_memory_usage, Trino's "
        "query.max-memory, an inference server's fixed memory pool): raise the cap, set an "
        "eviction policy (maxmemory-policy), or make the query lighter. The process was not "
        "killed and the host's memory is not the limit.",
    ),
    "oom_named_as_a_risk": (
        "The text proposes a change (a feature request, a pull request) and names "
        "out-of-memory only as a risk to avoid: nothing in it reports one that happened. If "
        "the incident has a death, read the container's last state and the node's kernel log "
        "around it; if it has none, there is nothing to triage.",
    ),
    "false_oom_report": (
        "The out-of-memory is shown false: the device reported memory free when the "
        "allocation failed. Suspect the runtime or driver (a release's regression, device "
        "selection or an affinity mask such as ZE_AFFINITY_MASK or CUDA_VISIBLE_DEVICES): "
        "compare versions, try one device visible, and do not shrink the workload for it.",
    ),
    "grpc_message_size": (
        "gRPC refused a message over its size cap (status RESOURCE_EXHAUSTED): raise the "
        "channel's grpc.max_send_message_length / grpc.max_receive_message_length on both "
        "ends, or send the payload in chunks. Memory did not run out.",
    ),
    "gpu_unavailable": (
        "The GPU was busy or unavailable, not out of memory: another process holds it in "
        "EXCLUSIVE_PROCESS compute mode (`nvidia-smi -q -d COMPUTE`), or the driver was being "
        "reloaded or upgraded. Check `nvidia-smi` for the holder and the driver's state.",
    ),
    "pinned_host_memory": (
        "XLA could not pin (page-lock) host memory and retried smaller: a limit on locked "
        "memory (WSL, a container's `ulimit -l`), not the GPU's memory. It is a warning unless "
        "the job then failed; if it did, raise the memlock limit or lower XLA's host pool "
        "(XLA_PYTHON_CLIENT_MEM_FRACTION does not cover it).",
    ),
    "locked_memory_limit": (
        "The locked-memory limit (ulimit -l, RLIMIT_MEMLOCK) refused mlock: raise it for the "
        "service (LimitMEMLOCK=infinity in its systemd unit, memlock in limits.conf, or the "
        "container runtime's ulimits). Memory is not exhausted and nothing was killed.",
    ),
    "disk_full": (
        "A disk, not memory, is full: find which filesystem (`df -h`): ephemeral storage, a "
        "cache (HF_HOME, ~/.cache, /tmp), checkpoints. /dev/shm would be named in the message.",
    ),
    "crash_signal": (
        "The process crashed on a signal (SIGSEGV, SIGABRT), not for memory: get its native "
        "stack (faulthandler, a core dump) and check the extension or driver it crashed in.",
    ),
    "launcher_child_exit": (
        "The launcher stopped its other workers after one exited with its own status: read "
        "that worker's log for its first error; the others' kill is the consequence.",
    ),
    "ephemeral_storage_eviction": (
        "Evicted for local disk (or the node's PIDs), not memory: the kubelet's SIGKILL and exit "
        "code 137 come from the eviction. Set ephemeral-storage requests/limits, or write large "
        "files to a volume instead of the container's filesystem.",
    ),
    "liveness_probe_kill": (
        "The kubelet killed the container after failed liveness probes, not for memory: add a "
        "startupProbe or raise initialDelaySeconds, timeoutSeconds and failureThreshold "
        "(loading a model can take minutes).",
    ),
    "bus_error_disk_full": (
        "A bus error beside a full root filesystem: a file mapped from a disk with no space "
        "left faults when it is first written. Free space on that filesystem (or give the "
        "container a larger one); /dev/shm is not the cause.",
    ),
    "kv_pool_accounting": (
        "The serving engine refused the batch while it reported at least as many KV-cache "
        "tokens available (free plus evictable) as the batch asked for: its pool accounting "
        "failed, the GPU's memory was not exhausted. Report it to the engine with the "
        "scheduler's log; lowering the batch size or --mem-fraction-static will not fix it.",
    ),
    "xpu_allocation_size_cap": (
        "An Intel GPU refuses a single allocation of 4 GiB or more by default, with memory "
        "free on the card; PyTorch reports it as 'XPU out of memory'. Split the tensor (or "
        "the batch) so no one allocation reaches 4 GiB, or allow large allocations where the "
        "runtime offers it (Level Zero's relaxed allocation limits).",
    ),
    "code_signing_kill": (
        "macOS killed the process because a page of its code failed the signature check "
        "(`CODE SIGNING: cs_invalid_page … sending SIGKILL`; the shell says `Killed: 9`): not "
        "memory. Re-sign the binary after any change to it (`codesign --force --sign - <file>`), "
        "or rebuild it rather than patching it in place.",
    ),
    "stop_requested": (
        "The log shows a stop that was asked for (a restart, a delete, a preemption) just "
        "before the SIGKILL: the process did not exit within its grace period. Not an OOM; "
        "handle SIGTERM and exit promptly, or lengthen terminationGracePeriodSeconds.",
    ),
    "image_pull": (
        "The image could not be pulled, so nothing ran: check the image name and tag, the "
        "registry's credentials (imagePullSecrets) and the node's access to the registry.",
    ),
    "terminated_on_request": (
        "The process was asked to stop (SIGTERM: a deletion, a node shutdown, a preemption, a "
        "deadline, or its own pool shutting down): look at who asked, not at memory.",
    ),
    "memory_notice": (
        "A notice about memory use, not a failure: TensorFlow warning of a large allocation or "
        "taking a slower path, TensorRT skipping a tactic whose workspace does not fit, Dask "
        "pausing or spilling a worker. If the job failed, its cause is elsewhere in the log; "
        "if it is slow, give it more memory or smaller batches.",
    ),
    "shm_not_usable": (
        "Shared memory could not be opened or made, for a reason other than space: fix "
        "/dev/shm's permissions or mount (read-only, owned by another user), the System V "
        "limits or policy (ipcs -l), the open-file limit, or the sandbox. Making /dev/shm "
        "larger will not help.",
    ),
    "thread_limit": (
        "The JVM could not start another thread: the user's or container's limit on processes "
        "and threads (ulimit -u, the pod's pids limit), or too many threads asked for (Bazel's "
        "--jobs). Lower the threads or raise the limit; the heap and the host's memory were "
        "not what ran out.",
    ),
    "device_access_denied": (
        "The GPU's device nodes could not be opened, so the allocation that followed failed: "
        "add the user running the job to the video group (or give the container the "
        "devices), log in again and rerun. Nothing ran out of memory.",
    ),
    "scheduling_failed": (
        "The scheduler found no node with enough unrequested memory, CPU or GPUs, so nothing "
        "ran: lower the pod's or job's requests (--mem), free or add capacity, or check node "
        "selectors and taints. Nothing ran out of memory.",
    ),
    "admission_refused": (
        "The pod or job was refused before it ran (a device plugin that could not allocate a "
        "GPU at admission, a quota or admission webhook, a batch submission): nothing ran out "
        "of memory. Read the refusal: a lost or unhealthy GPU, the quota's limits, or the "
        "resource fields the policy requires.",
    ),
    "hugepages_bus_error": (
        "A bus error where the host's hugepages are named: the program mapped huge pages the "
        "container may not use. Disable them in the program (PostgreSQL: huge_pages = off) or "
        "give the pod a hugepages-2Mi/1Gi request and limit. Not /dev/shm.",
    ),
    "broken_memory_accounting": (
        "The message says this process holds more memory than any GPU has, so its figures "
        "come from a broken count, not from a full card: compare nvidia-smi inside and "
        "outside the container, check that the driver and the CUDA runtime match, and look "
        "for an earlier CUDA error in the log.",
    ),
    "cuda_launch_failure": (
        "A CUDA library or kernel failed for a reason other than memory: rerun with "
        "CUDA_LAUNCH_BLOCKING=1 to find the op; check the node's kernel log for XIDs.",
    ),
}


def _absurd(facts: Facts) -> tuple[str, ...]:
    n = facts.numbers
    size = _gib(n.requested.value) if n.requested else "the request"
    of = f", {n.requested.value // n.total.value}x the whole GPU" if n.requested and n.total else ""
    return (
        f"The request ({size}{of}) cannot be a capacity problem: it is the symptom of another "
        "bug. Look for a wrong tensor shape (a dimension read from the wrong field, a missing "
        "reshape), an overflowed size, or an earlier failure (an NCCL error or timeout) just "
        "before it.",
    )


def advice_for(
    verdict: Verdict, facts: Facts, *, kind: Workload, shm_bytes: int | None = None
) -> tuple[str, ...]:
    """Concrete steps for the verdict; for a failure that is not about memory, its own steps."""
    if verdict.family in (TOLD_ON_THE_CARD, TOLD_ON_THE_HOST):
        where = "the GPU's" if verdict.cls == "cuda_oom" else "the host's"
        first = (
            f"Only words say this was an OOM, and the lines around them point at {where} "
            "memory: no allocator message or kill line was found. Confirm it with the "
            "container's last state and the node's kernel log (an OOM-killer line) or the "
            "GPU's framebuffer use before the death."
        )
        rest = (
            _cuda_oom(verdict, facts, kind)
            if verdict.cls == "cuda_oom"
            else _host(verdict, facts, kind)
        )
        return (first, *rest)
    if verdict.cls == "cuda_oom":
        return tuple(_cuda_oom(verdict, facts, kind))
    if verdict.cls == "cuda_oom_fragmentation":
        return tuple(_fragmentation(verdict, facts, kind))
    if verdict.cls == "host_oom_killed":
        return tuple(_host(verdict, facts, kind))
    if verdict.cls == "shm_exhausted":
        return tuple(_shm(shm_bytes))
    if verdict.cls == "killed_unknown":
        return FIND_OUT
    if verdict.cls == "cannot_tell":
        return CANNOT_TELL
    if verdict.family == "absurd_request":
        return _absurd(facts)
    if verdict.unexplained:
        # It names its cause, but memory words elsewhere in the log are not that cause's.
        return (*OTHER.get(verdict.family, ()), *UNEXPLAINED_BESIDE)
    return OTHER.get(verdict.family, ())
