"""Read the facts out of an OOM-looking log and decide, by ordered rules, what kind of OOM it is."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

OomClass = Literal[
    "cuda_oom", "cuda_oom_fragmentation", "host_oom_killed", "shm_exhausted", "not_oom"
]

GiB = 1024**3
_UNITS = {"b": 1, "bytes": 1, "kib": 1024, "mib": 1024**2, "gib": GiB, "tib": 1024**4}
_SIZE = r"(\d+(?:\.\d+)?)\s*(bytes|B|KiB|MiB|GiB|TiB)"

# Fragmentation is judged from the allocator's numbers, not from a keyword: the request failed
# although the caching allocator already held at least that much reserved-but-unused memory,
# and that idle reserve is a real share of the GPU (a few MiB of slack on a full GPU is not
# fragmentation, it is a full GPU).
FRAGMENTED_SHARE_OF_TOTAL = 0.10

# GPU memory exhaustion as each framework words it.
_GPU_OOM = re.compile(
    r"CUDA out of memory"  # PyTorch, every version (also inside torch.OutOfMemoryError)
    r"|torch(?:\.cuda)?\.OutOfMemoryError"
    r"|CUDA error: out of memory|cudaErrorMemoryAllocation"  # raw CUDA runtime
    r"|OOM when allocating tensor"  # TensorFlow ResourceExhaustedError
    r"|RESOURCE_EXHAUSTED: (?:Out of memory|Failed to allocate)"  # JAX / XLA
    r"|Resource exhausted: Out of memory"  # older jaxlib
    r"|CUBLAS_STATUS_ALLOC_FAILED"  # cuBLAS could not allocate its workspace
    r"|NCCL WARN Cuda failure '?out of memory|Failed to CUDA calloc"  # NCCL buffers
    r"|No available memory for the cache blocks"  # vLLM: no room left for the KV cache
    r"|larger than the maximum number of tokens that can be stored in KV cache"  # vLLM
)
# /dev/shm too small: PyTorch DataLoader workers, NCCL's shared-memory transport.
_SHM = re.compile(
    r"insufficient shared memory \(shm\)"
    r"|out of shared memory"
    r"|killed by signal: Bus error"
    r"|failed to extend /dev/shm"
    r"|/dev/shm\S*.*No space left on device"
)
# The kernel's OOM killer (host RAM or the pod's memory cgroup) and the kubelet's record of it.
_HOST_OOM = re.compile(
    r"Out of memory: Kill(?:ed)? process"
    r"|Memory cgroup out of memory"
    r"|oom-kill:"
    r"|invoked oom-killer"
    r"|\bOOMKilled\b"
)
_LIVENESS = re.compile(r"Liveness probe failed|failed liveness probe", re.IGNORECASE)
_EXIT_CODE = re.compile(r"Exit Code:\s*(\d+)")
_REASON = re.compile(r"Reason:\s*(\w+)")
_RSS = re.compile(r"anon-rss:([\d,]+)kB")
_CGROUP_LIMIT = re.compile(r"memory: usage \d+kB, limit (\d+)kB")

_REQUESTED = (
    re.compile(r"Tried to allocate " + _SIZE),
    re.compile(r"(?:trying to allocate|Out of memory allocating) (\d+)() bytes"),
    re.compile(r"Failed to allocate request for \S+ \((\d+)(B)\)"),
)
_TOTAL = re.compile(_SIZE + r" total capacity|total capac(?:i)?ty of " + _SIZE)
_FREE = re.compile(_SIZE + r" free[;)]|of which " + _SIZE + r" is free")
_ALLOCATED = re.compile(_SIZE + r" already allocated|" + _SIZE + r" is allocated by PyTorch")
_RESERVED = re.compile(_SIZE + r" reserved in total by PyTorch|" + _SIZE + r" cached\)")
_UNALLOCATED = re.compile(_SIZE + r" is reserved by PyTorch but unallocated")
_OTHER_PROCESS = re.compile(r"Process \d+ has " + _SIZE + r" memory in use")


def _bytes(groups: tuple[str | None, ...]) -> int | None:
    """The first (number, unit) pair among regex groups, in bytes."""
    values = [g for g in groups]
    for i in range(0, len(values) - 1, 2):
        number, unit = values[i], values[i + 1]
        if number is not None:
            return int(float(number) * _UNITS[(unit or "b").lower()])
    return None


def _first(pattern: re.Pattern[str], text: str) -> int | None:
    found = pattern.search(text)
    return None if found is None else _bytes(found.groups())


@dataclass(frozen=True)
class Facts:
    """What the log and the pod status say, before any judgement."""

    gpu_oom: tuple[str, ...]
    shm: tuple[str, ...]
    host_oom: tuple[str, ...]
    exit_code: int | None
    reason: str | None
    liveness_failed: bool
    numbers: dict[str, int] = field(default_factory=dict)

    @property
    def fragmented(self) -> bool:
        n = self.numbers
        idle, wanted, total = (
            n.get("reserved_unallocated_bytes"),
            n.get("requested_bytes"),
            n.get("total_bytes"),
        )
        if idle is None or wanted is None or total is None or total == 0:
            return False
        return idle >= wanted and idle >= FRAGMENTED_SHARE_OF_TOTAL * total


def _lines(pattern: re.Pattern[str], lines: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(line.strip()[:400] for line in lines if pattern.search(line)))


def _allocator_numbers(text: str) -> dict[str, int]:
    numbers: dict[str, int] = {}
    for pattern in _REQUESTED:
        if (value := _first(pattern, text)) is not None:
            numbers["requested_bytes"] = value
            break
    for key, pattern in (
        ("total_bytes", _TOTAL),
        ("free_bytes", _FREE),
        ("allocated_bytes", _ALLOCATED),
        ("reserved_bytes", _RESERVED),
        ("reserved_unallocated_bytes", _UNALLOCATED),
    ):
        if (value := _first(pattern, text)) is not None:
            numbers[key] = value
    # The old message gives reserved and allocated; the idle reserve is their difference.
    if "reserved_unallocated_bytes" not in numbers and {"reserved_bytes", "allocated_bytes"} <= (
        numbers.keys()
    ):
        numbers["reserved_unallocated_bytes"] = max(
            0, numbers["reserved_bytes"] - numbers["allocated_bytes"]
        )
    others = [_bytes(m.groups()) or 0 for m in _OTHER_PROCESS.finditer(text)]
    if others:
        numbers["other_processes_bytes"] = sum(others)
    rss = [int(m.group(1).replace(",", "")) * 1024 for m in _RSS.finditer(text)]
    if rss:
        numbers["killed_rss_bytes"] = max(rss)
    if (limit := _CGROUP_LIMIT.search(text)) is not None:
        numbers["cgroup_limit_bytes"] = int(limit.group(1)) * 1024
    return numbers


def gather(
    text: str,
    *,
    exit_code: int | None,
    reason: str | None,
    shm_bytes: int | None,
    liveness_failed: bool,
) -> Facts:
    """The facts in `text` and the pod status; explicit arguments win over what the text says."""
    lines = text.splitlines()
    if exit_code is None and (found := _EXIT_CODE.search(text)) is not None:
        exit_code = int(found.group(1))
    if reason is None and (found_reason := _REASON.search(text)) is not None:
        reason = found_reason.group(1)
    numbers = _allocator_numbers(text)
    if shm_bytes is not None:
        numbers["shm_bytes"] = shm_bytes
    return Facts(
        gpu_oom=_lines(_GPU_OOM, lines),
        shm=_lines(_SHM, lines),
        host_oom=_lines(_HOST_OOM, lines),
        exit_code=exit_code,
        reason=reason,
        liveness_failed=liveness_failed or bool(_LIVENESS.search(text)),
        numbers=numbers,
    )


@dataclass(frozen=True)
class Rule:
    """One step of the decision: if `applies`, the log is of class `cls`."""

    cls: OomClass
    applies: Callable[[Facts], bool]


# Tried in order; the first that applies decides.
RULES: tuple[Rule, ...] = (
    # A framework said the GPU ran out AND the allocator's own numbers show it was holding an
    # idle reserve at least as big as the request: the memory exists but is in pieces.
    Rule("cuda_oom_fragmentation", lambda f: bool(f.gpu_oom) and f.fragmented),
    # A framework said the GPU ran out: the process itself reported it, which is the most
    # specific evidence a log can carry, so it outranks anything the pod status adds later.
    Rule("cuda_oom", lambda f: bool(f.gpu_oom)),
    # /dev/shm ran out (DataLoader bus error, NCCL shm segment): host RAM may be plentiful,
    # so this must be told apart from the OOM killer before looking at exit codes.
    Rule("shm_exhausted", lambda f: bool(f.shm)),
    # The kernel's OOM killer or the kubelet's OOMKilled reason: host or cgroup memory.
    Rule("host_oom_killed", lambda f: bool(f.host_oom) or f.reason == "OOMKilled"),
    # A bare 137 is SIGKILL. With no other reason given it is most often the cgroup OOM killer,
    # but a failed liveness probe (the kubelet's own SIGKILL) or another recorded reason
    # explains it without any memory problem.
    Rule(
        "host_oom_killed",
        lambda f: f.exit_code == 137 and not f.liveness_failed and f.reason in (None, ""),
    ),
    # Nothing above: not an out-of-memory failure.
    Rule("not_oom", lambda f: True),
)


def decide(facts: Facts) -> OomClass:
    """The class of the first rule that applies."""
    return next(rule.cls for rule in RULES if rule.applies(facts))
