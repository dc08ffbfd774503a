"""What to do about each kind of OOM: short, concrete steps, sized from the observed numbers."""

from __future__ import annotations

from gpubot.domain.oom_rules import Facts, GiB


def _gib(value: int) -> str:
    return f"{value / GiB:.2f} GiB"


def _gpu_common(facts: Facts) -> list[str]:
    n = facts.numbers
    advice: list[str] = []
    if n.get("other_processes_bytes"):
        advice.append(
            f"The GPU lists processes holding {_gib(n['other_processes_bytes'])}: if they are "
            "other pods sharing it by time-slicing, give this job a whole GPU or its own MIG "
            "slice."
        )
    if "requested_bytes" in n and "total_bytes" in n and n["requested_bytes"] > n["total_bytes"]:
        advice.append(
            f"One allocation ({_gib(n['requested_bytes'])}) is larger than the whole GPU "
            f"({_gib(n['total_bytes'])}): the model cannot fit as is; quantise it (8/4-bit) or "
            "shard it with tensor parallelism across GPUs."
        )
    return advice


def _cuda_oom(facts: Facts) -> list[str]:
    advice = _gpu_common(facts)
    advice += [
        "Lower the per-GPU batch size; keep the effective batch with gradient accumulation.",
        "Trade compute for memory with activation checkpointing and mixed precision (bf16/fp16).",
    ]
    if any("cache blocks" in line or "KV cache" in line for line in facts.gpu_oom):
        advice.insert(
            0,
            "vLLM: raise --gpu-memory-utilization, or lower --max-model-len / "
            "--max-num-seqs so the KV cache fits.",
        )
    advice.append(
        "If the model still does not fit, quantise it or shard it with tensor parallelism."
    )
    return advice


def _fragmentation(facts: Facts) -> list[str]:
    n = facts.numbers
    return [
        f"{_gib(n['reserved_unallocated_bytes'])} was reserved but unused when "
        f"{_gib(n['requested_bytes'])} was refused: set "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True in the pod's env.",
        "Avoid tensors whose shapes change every step (pad or bucket sequence lengths); "
        "torch.cuda.empty_cache() between phases releases idle blocks.",
        *_gpu_common(facts),
    ]


def _host_oom(facts: Facts) -> list[str]:
    n = facts.numbers
    peak = n.get("killed_rss_bytes")
    sized = f" above the observed peak of {_gib(peak)} (add ~20% headroom)" if peak else ""
    limit = n.get("cgroup_limit_bytes")
    was = f" (it was {_gib(limit)})" if limit else ""
    return [
        f"Raise the container's memory limit{sized}{was}; set requests equal to limits so "
        "the pod is not the first evicted.",
        "Cut host memory: fewer DataLoader workers, no whole-dataset preloading, memory-map "
        "large files.",
        "This is host RAM, not GPU memory: GPU batch size changes will not fix it.",
    ]


def _shm(facts: Facts) -> list[str]:
    current = facts.numbers.get("shm_bytes")
    size_gib = max(1, -(-4 * current // GiB)) if current else 8
    now = f" (it is {_gib(current)} now)" if current else ""
    return [
        f"Mount an emptyDir with medium: Memory at /dev/shm, sizeLimit: {size_gib}Gi{now}; "
        "it counts against the pod's memory limit, so raise that too.",
        "Or lower DataLoader num_workers (0 avoids shared memory entirely).",
    ]


def advice_for(cls: str, facts: Facts) -> tuple[str, ...]:
    """The advice for a class; empty for `not_oom`."""
    if cls == "cuda_oom":
        return tuple(_cuda_oom(facts))
    if cls == "cuda_oom_fragmentation":
        return tuple(_fragmentation(facts))
    if cls == "host_oom_killed":
        return tuple(_host_oom(facts))
    if cls == "shm_exhausted":
        return tuple(_shm(facts))
    return ()
