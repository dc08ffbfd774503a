"""The allocator's own numbers in an OOM message, read with each framework version's meaning."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpubot.knowledge.oom.literals import may_match

GiB = 1024**3
TiB = 1024**4

_UNITS = {
    "b": 1,
    "bytes": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": GiB,
    "gb": GiB,
    "gib": GiB,
    "t": TiB,
    "tb": TiB,
    "tib": TiB,
    "p": 1024**5,
    "pb": 1024**5,
    "pib": 1024**5,
    "e": 1024**6,
    "eb": 1024**6,
    "eib": 1024**6,
}
# Bounded digits, ASCII only: a number in a log is never more than a few dozen characters.
_NUM = r"(?<![\d.])(\d{1,20}(?:\.\d{1,6})?)"  # from the first digit: linear on digit runs
_UNIT = r"(bytes|[KMGTPE]i?B|[KMGTPE]|B)"
_SIZE = _NUM + r" ?" + _UNIT + r"\b"
_FLAGS = re.ASCII

# A request the whole device could never hold many times over is the symptom of another bug
# (a shape read from the wrong field, an overflowed size, a collective that failed earlier):
# no GPU setting fixes it. Real requests reach a few times the card (a whole attention matrix,
# a high-resolution volume: 4.6 times in one real thread); in the corpus of real threads every
# request of more than five times the card was another bug's symptom, so the bar is five; with
# no capacity printed, more than any GPU has.
ABSURD_TIMES_CAPACITY = 5
# More than the largest GPUs hold (288 GB, B300 and MI355X: 268 GiB): no card could serve it.
ABSURD_WITHOUT_CAPACITY = 270 * GiB
# Fragmentation is the product's verdict only when the allocator holds idle at least this much
# as well as at least the request: a few MiB of idle reserve beside a tiny refused request is
# a full GPU, and no allocator setting would have saved it.
FRAGMENTATION_FLOOR = 256 * 1024**2


@dataclass(frozen=True)
class Size:
    """A printed size in bytes and how far off it can be (half the last printed digit)."""

    value: int
    slack: int = 0

    @property
    def low(self) -> int:
        return max(0, self.value - self.slack)


def _size(number: str, unit: str) -> Size:
    scale = _UNITS[unit.lower()]
    decimals = len(number.partition(".")[2])
    slack = 0 if scale == 1 else int(scale * 0.5 * 10**-decimals)
    return Size(int(float(number) * scale), slack)


def _find(pattern: re.Pattern[str], text: str, lowered: str | None = None) -> Size | None:
    if not may_match(pattern, text.lower() if lowered is None else lowered):
        return None
    found = pattern.search(text)
    if found is None:
        return None
    groups = [g for g in found.groups() if g is not None]
    if len(groups) == 1:  # a plain byte count, perhaps grouped by commas
        return Size(int(groups[0].replace(",", "")))
    return _size(groups[0], groups[1])


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, _FLAGS | flags)


_REQUESTED = (
    _p(r"Tried to allocate (?:more than )?" + _SIZE),  # PyTorch, every version
    _p(r"\bRequested memory: (\d{1,20})\b"),  # XGBoost's caching allocator, in bytes
    _p(r"(?:trying to allocate|Out of memory allocating) (\d{1,20}) bytes"),  # XLA
    _p(r"Failed to allocate request for \S{1,40} \((\d{1,20})B\)"),  # XLA BFC
    _p(r"failed to allocate \S{1,20} \((\d{1,20}) bytes\)"),  # CUDA driver via TF/XLA
    _p(r"ran out of memory trying to allocate " + _NUM + _UNIT),  # TF BFC allocator
    _p(r"cuMemAllocAsync failed to allocate \S{1,20} \((\d{1,20}) bytes\)"),
    _p(r"[Ff]ailed to allocate (\d{1,20}) ?bytes"),  # the CUDA allocators' bare byte count
    _p(r"Requested amount of (?:GPU )?memory \((\d{1,20}) bytes\)"),  # TensorRT
    _p(r"requested buffer of size (\d{1,20})\b"),  # ONNX Runtime's arena
    _p(r"out of memory to allocate (\d{1,20}) bytes"),  # CuPy
    _p(r"\[requestedSpace:\s{1,40}(\d{1,20}) B\]"),  # RELION's custom allocators
    _p(r"Out of memory allocating (\d{1,3}(?:,\d{3}){1,6}) bytes"),  # CuPy, grouped
    _p(r"Cannot allocate " + _SIZE + r" memory on"),  # PaddlePaddle
    _p(r"\bRequested\s{0,30}: " + _SIZE),  # cudaMallocAsync's report
    _p(r"\ballocating " + _SIZE + r" on device \d{1,3}: cudaMalloc failed"),  # ggml (llama.cpp)
    _p(r"\b(?:tried to|Request to) allocate (0) bytes"),  # TF's BFC allocator, degenerate
    _p(r"\bran out of memory when allocating (0)\b"),  # TF's EigenAllocator
)
_TOTAL = (
    _p(_SIZE + r" total capacity"),  # 1.x: "(GPU 0; 15.90 GiB total capacity; ..."
    _p(r"total capac(?:i)?ty of " + _SIZE),  # 2.x (and its "capacty" typo)
    _p(r"Free memory/Total memory: \d{1,20}/(\d{1,20})"),  # XLA's cuMemAllocAsync report
    _p(r"\bDevice limit\s{0,30}: " + _SIZE),  # cudaMallocAsync's report
)
# The card's size where the message omits it: a model name ("A100-SXM4-80GB", "H100 80GB
# HBM3"), nvidia-smi's memory column ("0MiB / 81559MiB"), or "a GPU with 8GB".
_DEVICE = (
    _p(
        r"\b(?:NVIDIA|Tesla|GeForce|Quadro|RTX|A100|H100|H200|L40S?|A10G?|V100)\b[\w -]{0,30}?"
        r"[ -](\d{1,3}) ?(GB|GiB)\b"
    ),
    _p(r"\d{1,6}MiB / (\d{3,6})(MiB)\b"),
    _p(r"\b(\d{1,3}) ?(GB|GiB|gb|G)\b[^\n]{0,12}?\b(?:GPU|gpu|VRAM|vram|card)\b"),
    _p(r"\b(?:GPU|gpu|card)s? with (\d{1,3}) ?(GB|GiB|gb)\b"),
)
_FREE = (_p(_SIZE + r" free[;)]"), _p(r"of which " + _SIZE + r" is free"))
# PyTorch >= 1.4: "A already allocated; F free; R reserved in total by PyTorch" (the t in
# PyTorch is lower-case in some builds). Reserved is the allocator's whole holding.
_ALLOCATED_1X = _p(_SIZE + r" already allocated")
# A stored copy may cut the line inside the words: "74.59 GiB reserved in tot".
_RESERVED_1X = _p(_SIZE + r" reserved in tot(?:al(?: by PyTorch)?)?\b", re.IGNORECASE)
# PyTorch 1.0-1.3: "... F free; C cached)": C was printed as cached minus allocated, so it is
# already the idle reserve, not the total.
_CACHED_1X = _p(_SIZE + r" cached\)")
# PyTorch 2.x says it outright.
_ALLOCATED_2X = _p(_SIZE + r" is allocated by PyTorch", re.IGNORECASE)
_UNALLOCATED_2X = _p(_SIZE + r" is reserved by PyTorch but unallocated", re.IGNORECASE)
# ... as a summary prints them, one "name: size" per line: "PyTorch allocated: 18.40 GiB",
# "Reserved but unallocated: 402.27 MiB".
_ALLOCATED_KV = _p(r"\bPyTorch allocated: " + _SIZE, re.IGNORECASE)
_UNALLOCATED_KV = _p(r"\bReserved but unallocated: " + _SIZE, re.IGNORECASE)
_THIS_PROCESS = _p(r"this process has " + _SIZE + r" memory in use")
_OTHER_PROCESS = _p(r"Process (\d{1,10}) has " + _SIZE + r" memory in use")
_RSS = _p(r"anon-rss:([\d,]{1,20})kB")
_CGROUP_LIMIT = _p(r"memory: usage \d{1,20}kB, limit (\d{1,20})kB")


@dataclass(frozen=True)
class AllocatorNumbers:
    """What the message says about memory; None where it says nothing."""

    requested: Size | None = None
    total: Size | None = None
    free: Size | None = None
    allocated: Size | None = None
    idle_reserve: Size | None = None  # reserved by the framework but not handed out
    idle_reserve_from: str = ""  # which wording it came from
    reserved: Size | None = None  # the allocator's whole holding, where the message gives it
    this_process: Size | None = None
    processes: tuple[tuple[int, Size], ...] = ()  # (pid, memory) as the GPU lists them
    killed_rss: int | None = None
    cgroup_limit: int | None = None

    def fragmented(self) -> bool:
        """Reserved-but-idle memory at least the refused request (beyond rounding doubt) and
        at least FRAGMENTATION_FLOOR."""
        if self.idle_reserve is None or self.requested is None:
            return False
        return self.idle_reserve.low > self.requested.value + self.requested.slack and (
            self.idle_reserve.value >= FRAGMENTATION_FLOOR
        )

    def absurd(self) -> bool:
        """A request no device could hold: many times the card, or more than any GPU has."""
        if self.requested is None:
            return False
        if self.requested.value == 0:  # nothing was asked for: a shape or size bug upstream
            return True
        if self.requested.value > ABSURD_WITHOUT_CAPACITY:  # whatever the card
            return True
        if self.total is not None and self.total.value > 0:
            return self.requested.value > ABSURD_TIMES_CAPACITY * self.total.value
        return False

    def broken_accounting(self) -> bool:
        """The message says the failing process holds more than any GPU has (17179869184.00
        GiB, 2^64 bytes read as GiB) and that the card had the request free: the figures come
        from a broken count (a container's view of the device, a driver at odds with the
        runtime), not from memory that ran out. With nothing free, the card is full all the
        same and only the one figure is wrong."""
        return (
            self.this_process is not None
            and self.this_process.value > ABSURD_WITHOUT_CAPACITY
            and self.free is not None
            and self.requested is not None
            and self.free.low > self.requested.value + self.requested.slack
        )

    def own_reserve(self) -> int | None:
        """How much the failing process itself holds, as best the message tells."""
        if self.this_process is not None:
            return self.this_process.value
        if self.allocated is not None and self.idle_reserve is not None:
            return self.allocated.value + self.idle_reserve.value
        return None

    def as_dict(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for key, size in (
            ("requested_bytes", self.requested),
            ("total_bytes", self.total),
            ("free_bytes", self.free),
            ("allocated_bytes", self.allocated),
            ("reserved_bytes", self.reserved),
            ("reserved_unallocated_bytes", self.idle_reserve),
            ("this_process_bytes", self.this_process),
        ):
            if size is not None:
                out[key] = size.value
        if self.processes:
            out["listed_processes_bytes"] = sum(s.value for _, s in self.processes)
        if self.killed_rss is not None:
            out["killed_rss_bytes"] = self.killed_rss
        if self.cgroup_limit is not None:
            out["cgroup_limit_bytes"] = self.cgroup_limit
        return out


def _first(patterns: tuple[re.Pattern[str], ...], text: str) -> Size | None:
    lowered = text.lower()
    for pattern in patterns:
        if (size := _find(pattern, text, lowered)) is not None:
            return size
    return None


def _idle_reserve(text: str) -> tuple[Size | None, Size | None, str]:
    """(allocated, idle reserve, wording) by the version of the message."""
    if (idle := _find(_UNALLOCATED_2X, text)) is not None:
        return _find(_ALLOCATED_2X, text), idle, "reserved by PyTorch but unallocated"
    if (idle := _find(_UNALLOCATED_KV, text)) is not None:
        return _find(_ALLOCATED_KV, text), idle, "reserved but unallocated"
    allocated = _find(_ALLOCATED_1X, text)
    if (cached := _find(_CACHED_1X, text)) is not None:
        return allocated, cached, "cached (already net of allocated)"
    reserved = _find(_RESERVED_1X, text)
    if reserved is not None and allocated is not None:
        idle = Size(
            max(0, reserved.value - allocated.value), slack=reserved.slack + allocated.slack
        )
        return allocated, idle, "reserved in total minus already allocated"
    return allocated, None, ""


def device_capacity(text: str) -> int | None:
    """A GPU's memory as a model name, nvidia-smi or a sentence states it, in bytes."""
    size = _first(_DEVICE, text)
    return size.value if size is not None else None


def read_numbers(text: str, *, device_bytes: int | None = None) -> AllocatorNumbers:
    """The numbers of the first OOM message in `text` (callers pass the evidence lines);
    `device_bytes`, the card's memory known from elsewhere, stands in for an unprinted total."""
    allocated, idle, wording = _idle_reserve(text)
    reserved = _find(_RESERVED_1X, text) if wording.startswith("reserved in total") else None
    processes = tuple(
        (int(m.group(1)), _size(m.group(2), m.group(3))) for m in _OTHER_PROCESS.finditer(text)
    )
    rss = [int(m.group(1).replace(",", "")) * 1024 for m in _RSS.finditer(text)]
    limit = _CGROUP_LIMIT.search(text)
    return AllocatorNumbers(
        requested=_first(_REQUESTED, text),
        total=_first(_TOTAL, text) or (Size(device_bytes) if device_bytes else None),
        free=_first(_FREE, text),
        allocated=allocated,
        idle_reserve=idle,
        idle_reserve_from=wording,
        reserved=reserved,
        this_process=_find(_THIS_PROCESS, text),
        processes=processes[:16],
        killed_rss=max(rss) if rss else None,
        cgroup_limit=int(limit.group(1)) * 1024 if limit else None,
    )
