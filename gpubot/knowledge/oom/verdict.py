"""Decide what kind of memory failure a log shows, from the families of evidence found in it."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass

from gpubot.knowledge.oom.allocator_numbers import (
    AllocatorNumbers,
    GiB,
    device_capacity,
    read_numbers,
)
from gpubot.knowledge.oom.cures import (
    KILL_CONFIRMED_MEMORY,
    KILL_CURE_TRIED,
    KILL_FOR_WANT_OF_MEMORY,
    KILL_FOUND_MEMORY,
    KILL_MEMORY_FILLING,
    MEMORY_CURE,
)
from gpubot.knowledge.oom.families import GPU_OOM, HOST, SHM
from gpubot.knowledge.oom.kills import (
    BUS_ERROR_UNKNOWN,
    CODE_SIGNING_KILL,
    LAUNCHER_CHILD_EXIT,
    LAUNCHER_TEARDOWN,
    SIGKILL,
    WORKER_DIED,
)
from gpubot.knowledge.oom.not_memory import (
    LIVENESS,
    MEMORY_WORDS,
    NEGATIVE,
    NON_MEMORY_EVICTION,
    STOP_REQUESTED,
)
from gpubot.knowledge.oom.reported import MEMCG_FILES, memcg_files_at_limit
from gpubot.knowledge.oom.scan import (
    Confidence,
    Lines,
    Match,
    OomClass,
    find,
    find_first,
    lines_matching,
    log_lines,
)
from gpubot.knowledge.oom.told_device import only_a_risk, told_oom_device

__all__ = ["RULES", "Facts", "GiB", "OomClass", "Rule", "Verdict", "decide", "gather"]

_EXIT_CODE = re.compile(r"Exit Code:\s{0,20}(\d{1,3})\b", re.ASCII)
_REASON = re.compile(r"^\s{0,20}Reason:\s{0,20}([A-Za-z]{1,40})\s*$", re.ASCII | re.MULTILINE)
_SIGKILL_EXIT = 137  # 128 + SIGKILL
# The allocator's numbers are read from at most this much of the failure's own lines, or,
# with no GPU evidence, of the log's tail: a number reader never sees a megabyte.
NUMBERS_CHARS = 16 * 1024
NUMBERS_TAIL_CHARS = 64 * 1024
# The families of an OOM told in words only (told_device), on the card or on the host.
TOLD_ON_THE_CARD = "gpu_oom_told_in_words"
TOLD_ON_THE_HOST = "host_oom_told_in_words"

# Memory words this close to a named failure's own lines (its message, the traceback and
# hints printed around it) are taken as part of it.
EXPLAINED_SPAN = 6


@dataclass(frozen=True)
class Facts:
    """What the log and the pod status say, before any judgement."""

    gpu_oom: tuple[Match, ...]
    shm: tuple[Match, ...]
    host: tuple[Match, ...]
    negatives: tuple[Match, ...]
    liveness: Match | None
    evicted_not_memory: Match | None
    stop_requested: Match | None
    code_signing: Match | None  # the OS killed it for an invalid code signature
    launcher_child_exit: Match | None
    sigkill: Match | None
    worker_died: Match | None  # a supervisor saw the worker die, and says not why
    memory_cure: Match | None  # more memory said to have cured the failure
    memory_words: Match | None  # memory words no family may explain
    exit_code: int | None
    reason: str | None  # the container's last termination reason
    alert_reason: str | None  # the alert's own `reason` label
    numbers: AllocatorNumbers
    # The log's lines, stripped as evidence lines are: where each piece of evidence sits.
    stripped: tuple[str, ...] = ()

    @property
    def oomkilled(self) -> bool:
        return "OOMKilled" in (self.reason, self.alert_reason)

    @property
    def killed(self) -> bool:
        return self.exit_code == _SIGKILL_EXIT or self.sigkill is not None

    def memory_words_away_from(self, lines: tuple[str, ...]) -> tuple[str, ...]:
        """The lines with memory words more than EXPLAINED_SPAN lines from every one of
        `lines`: words that a failure told by `lines` does not account for. Linear in the
        log: each memory line is checked against its nearest anchor only."""
        if self.memory_words is None:
            return ()
        words, anchors = set(self.memory_words.lines), set(lines)
        near = [i for i, line in enumerate(self.stripped) if line in anchors]
        far: dict[str, None] = {}
        for i, line in enumerate(self.stripped):
            if line not in words or line in anchors:
                continue
            k = bisect_left(near, i)
            gaps = [abs(near[j] - i) for j in (k - 1, k) if 0 <= j < len(near)]
            if not gaps or min(gaps) > EXPLAINED_SPAN:
                far[line] = None
        return tuple(far)

    def status_lines(self) -> tuple[str, ...]:
        out: list[str] = []
        if self.reason:
            out.append(f"last state reason: {self.reason}")
        if self.alert_reason and self.alert_reason != self.reason:
            out.append(f"alert reason: {self.alert_reason}")
        if self.exit_code is not None:
            out.append(f"exit code: {self.exit_code}")
        return tuple(out)


def gather(
    text: str,
    *,
    exit_code: int | None,
    reason: str | None,
    alert_reason: str | None = None,
    liveness_failed: bool = False,
    device_bytes: int | None = None,
    lines: Lines | None = None,
) -> Facts:
    """The facts in `text` (or in its `lines`, already read) and the pod status; explicit
    arguments win over what the text says."""
    if lines is None:
        lines = log_lines(text)
    scanned = "\n".join(lines)
    # Each pattern runs only if its words are there at all (a megabyte of digits has none).
    found = _EXIT_CODE.search(scanned) if "exit code" in lines.lowered else None
    if exit_code is None and found is not None:
        exit_code = int(found.group(1))
    found_reason = _REASON.search(scanned) if "reason:" in lines.lowered else None
    if reason is None and found_reason is not None:
        reason = found_reason.group(1)
    gpu = find_first(GPU_OOM, lines)
    # The allocator's numbers are read from the lines that reported the failure, so that an
    # earlier, unrelated size in the log is not taken for the request.
    evidence_text = "\n".join(dict.fromkeys(m.context for m in gpu))[:NUMBERS_CHARS]
    liveness = find(LIVENESS, lines)
    if liveness is None and liveness_failed:
        liveness = Match(LIVENESS, ("liveness probe failed (the kubelet killed the container)",))
    return Facts(
        gpu_oom=tuple(gpu),
        shm=tuple(find_first(SHM, lines)),
        host=_host_matches(lines),
        negatives=tuple(find_first(NEGATIVE, lines)),
        liveness=liveness,
        evicted_not_memory=find(NON_MEMORY_EVICTION, lines),
        stop_requested=find(STOP_REQUESTED, lines),
        code_signing=find(CODE_SIGNING_KILL, lines),
        launcher_child_exit=find(LAUNCHER_CHILD_EXIT, lines),
        sigkill=find(SIGKILL, lines),
        worker_died=find(WORKER_DIED, lines) or find(BUS_ERROR_UNKNOWN, lines),
        memory_cure=find(MEMORY_CURE, lines)
        or find(KILL_FOUND_MEMORY, lines)
        or find(KILL_FOR_WANT_OF_MEMORY, lines)
        or find(KILL_CONFIRMED_MEMORY, lines)
        or find(KILL_CURE_TRIED, lines)
        or find(KILL_MEMORY_FILLING, lines),
        memory_words=find(MEMORY_WORDS, lines),
        exit_code=exit_code,
        reason=reason or None,
        alert_reason=alert_reason or None,
        numbers=read_numbers(
            evidence_text or scanned[-NUMBERS_TAIL_CHARS:],
            device_bytes=device_bytes or (device_capacity(scanned) if gpu else None),
        ),
        stripped=tuple(line.strip() for line in lines),
    )


def _host_matches(lines: Lines) -> tuple[Match, ...]:
    """Host memory families, then a memory cgroup's files read at their limit."""
    found = tuple(find_first(HOST, lines))
    at_limit = memcg_files_at_limit(lines) if "_in_bytes" in lines.lowered else ()
    return (*found, Match(MEMCG_FILES, at_limit)) if at_limit else found


@dataclass(frozen=True)
class Verdict:
    """The class, the family of evidence that decided it, and how sure the rule is."""

    cls: OomClass
    family: str
    confidence: Confidence
    lines: tuple[str, ...]
    # Memory words the failure it names does not account for (then never a confident answer).
    unexplained: tuple[str, ...] = ()


VerdictFn = Callable[[Facts], Verdict | None]


@dataclass(frozen=True)
class Rule:
    """One step of the decision: `judge` returns a verdict, or None to pass to the next."""

    name: str
    judge: VerdictFn


def _absurd(f: Facts) -> Verdict | None:
    """A request many times the device, from the allocator's numbers, or a size no machine
    holds named anywhere in the log (not_memory.ABSURD_SIZE: a negative size cast to
    unsigned, tens of terabytes)."""
    if not f.gpu_oom:
        return None
    named = [m for m in f.negatives if m.family.name == "absurd_request"]
    if not f.numbers.absurd() and not named:
        return None
    lines = (*f.gpu_oom[0].lines, *(line for m in named for line in m.lines))
    return Verdict("not_oom", "absurd_request", "high", tuple(dict.fromkeys(lines)))


def _broken_accounting(f: Facts) -> Verdict | None:
    if not f.gpu_oom or not f.numbers.broken_accounting():
        return None
    return Verdict("not_oom", "broken_memory_accounting", "medium", f.gpu_oom[0].lines)


# Intel's GPUs refuse one allocation of 4 GiB or more by default (Level Zero's
# maxMemAllocSize is just under 4 GiB) and PyTorch says "XPU out of memory" for it.
XPU_MAX_ALLOCATION = 4 * GiB


def _xpu_size_cap(f: Facts) -> Verdict | None:
    """An XPU request at or over the one-allocation cap and well under the card's size (at
    most three quarters of it), where the message does not show less free than asked (free,
    or the card's size less what PyTorch holds): the cap refused it, not exhaustion. A request
    near the whole card fails either way."""
    if not f.gpu_oom or not any("XPU out of memory" in line for line in f.gpu_oom[0].lines):
        return None
    numbers = f.numbers
    wanted, free, total = numbers.requested, numbers.free, numbers.total
    if wanted is None or wanted.value < XPU_MAX_ALLOCATION:
        return None
    held = numbers.reserved or numbers.allocated
    if (free is not None and free.value < wanted.value) or (
        total is not None and 4 * wanted.value > 3 * total.value
    ):
        return None
    if total is not None and held is not None and total.value - held.value < wanted.value:
        return None
    return _not_memory(f, "xpu_allocation_size_cap", "medium", f.gpu_oom[0].lines)


_TOKENS_ASKED = re.compile(r"\bTry to allocate (\d{1,12}) tokens\b")
_TOKENS_FREE = re.compile(r"\bAvailable full tokens: (\d{1,12})\b")


def _last_count(pattern: re.Pattern[str], f: Facts) -> int | None:
    """The number `pattern` captures on the last line it matches, if any."""
    found = lines_matching(pattern, f.stripped)
    hit = pattern.search(found[-1]) if found else None
    return int(hit.group(1)) if hit else None


def _kv_pool_not_full(f: Facts) -> Verdict | None:
    """A serving engine's KV pool refusing a batch while it printed at least as many tokens
    available (free and evictable) as the batch asked for: its accounting failed, the pool
    was not full."""
    if not f.gpu_oom or f.gpu_oom[0].family.name != "serving_kv_pool_full":
        return None
    asked, free = _last_count(_TOKENS_ASKED, f), _last_count(_TOKENS_FREE, f)
    if asked is None or free is None or free < asked:
        return None
    return _not_memory(f, "kv_pool_accounting", "medium", f.gpu_oom[0].lines)


def _gpu(f: Facts) -> Verdict | None:
    if not f.gpu_oom:
        return None
    first = f.gpu_oom[0]
    lines = tuple(dict.fromkeys(line for m in f.gpu_oom for line in m.lines))
    if f.numbers.fragmented():
        idle, wanted = f.numbers.idle_reserve, f.numbers.requested
        assert idle is not None  # fragmented() checked both
        assert wanted is not None
        sure: Confidence = "high" if idle.low >= 2 * wanted.value else "medium"
        return Verdict("cuda_oom_fragmentation", "allocator_idle_reserve", sure, lines)
    return Verdict("cuda_oom", first.family.name, first.family.confidence, lines)


def _shm(f: Facts) -> Verdict | None:
    if not f.shm:
        return None
    return Verdict(
        "shm_exhausted", f.shm[0].family.name, f.shm[0].family.confidence, f.shm[0].lines
    )


def _host(f: Facts) -> Verdict | None:
    if f.host:
        first = f.host[0]
        return Verdict("host_oom_killed", first.family.name, first.family.confidence, first.lines)
    if f.oomkilled:
        # The pod's last state (or the alert built from it) says the cgroup OOM killer did it,
        # even when the previous logs are empty: a killed process rarely gets to write.
        return Verdict("host_oom_killed", "kubelet_oomkilled", "high", ())
    return None


def _not_memory(f: Facts, family: str, confidence: Confidence, lines: tuple[str, ...]) -> Verdict:
    """A failure with a cause of its own. When the log also holds memory words far from its
    lines (not its own message or what was printed around it), nothing explains those: the
    answer is then not sure (low confidence), and it cites them beside its own lines."""
    unexplained = f.memory_words_away_from(lines)
    if not unexplained:
        return Verdict("not_oom", family, confidence, lines)
    return Verdict("not_oom", family, "low", (*lines, *unexplained), unexplained)


def _liveness(f: Facts) -> Verdict | None:
    if f.liveness is None:
        return None
    return _not_memory(f, "liveness_probe_kill", "high", f.liveness.lines)


def _evicted_not_memory(f: Facts) -> Verdict | None:
    if f.evicted_not_memory is None:
        return None
    found = f.evicted_not_memory
    return _not_memory(f, found.family.name, found.family.confidence, found.lines)


def _stopped(f: Facts) -> Verdict | None:
    if f.stop_requested is None or not f.killed:
        return None
    return _not_memory(f, "stop_requested", "medium", f.stop_requested.lines)


def _code_signing(f: Facts) -> Verdict | None:
    if f.code_signing is None:
        return None
    return _not_memory(f, "code_signing_kill", "high", f.code_signing.lines)


def _launcher_child_exit(f: Facts) -> Verdict | None:
    if f.launcher_child_exit is None:
        return None
    found = f.launcher_child_exit
    return _not_memory(f, found.family.name, found.family.confidence, found.lines)


def _cured_by_memory(f: Facts) -> Verdict | None:
    """A kill, or a worker or kernel that died, with the host's memory found or cured."""
    if f.memory_cure is None:
        return None
    if f.killed:
        died = f.sigkill.lines if f.sigkill is not None else ()
    elif f.worker_died is not None:
        died = f.worker_died.lines
    else:
        return None
    lines = (*died, *f.memory_cure.lines)
    return Verdict("host_oom_killed", f.memory_cure.family.name, "medium", lines)


def _teardown_after_failure(f: Facts) -> Verdict | None:
    """A launcher's teardown is the only kill shown, and a known failure came first (an NCCL
    watchdog's timeout, say): the kill is the launcher's answer to that failure."""
    if f.exit_code is not None or f.sigkill is None or not f.negatives:
        return None
    if not all(LAUNCHER_TEARDOWN.search(line) for line in f.sigkill.lines):
        return None
    return _negative(f)


def _sigkill(f: Facts) -> Verdict | None:
    if not f.killed:
        return None
    lines = f.sigkill.lines if f.sigkill is not None else ()
    return Verdict("killed_unknown", "sigkill_cause_unknown", "medium", lines)


def _negative(f: Facts) -> Verdict | None:
    if not f.negatives:
        return None
    first = f.negatives[0]
    return _not_memory(f, first.family.name, first.family.confidence, first.lines)


def _worker_died(f: Facts) -> Verdict | None:
    if f.worker_died is None:
        return None
    return Verdict("killed_unknown", f.worker_died.family.name, "medium", f.worker_died.lines)


def _told_in_words(f: Facts) -> Verdict | None:
    """Memory words no family explains, one of them a sentence reporting an OOM, placed on
    the card or the host by what the lines around it name: low confidence (words only)."""
    if f.memory_words is None:
        return None
    found = told_oom_device(f.stripped, f.memory_words.lines)
    if found is None:
        return None
    cls, lines = found
    family = TOLD_ON_THE_CARD if cls == "cuda_oom" else TOLD_ON_THE_HOST
    return Verdict(cls, family, "low", lines)


def _only_a_risk(f: Facts) -> Verdict | None:
    """A proposal (a feature request, a pull request) that names out-of-memory only as a risk
    to avoid, with nothing reporting one that happened: not an OOM, at low confidence."""
    if f.memory_words is None or not only_a_risk(f.stripped, f.memory_words.lines):
        return None
    return Verdict("not_oom", "oom_named_as_a_risk", "low", f.memory_words.lines)


def _cannot_tell(f: Facts) -> Verdict | None:
    if f.memory_words is None:
        return None
    return Verdict("cannot_tell", f.memory_words.family.name, "low", f.memory_words.lines)


def _nothing(f: Facts) -> Verdict:
    return Verdict("not_oom", "no_memory_evidence", "low", ())


# Tried in order; the first verdict wins.
RULES: tuple[Rule, ...] = (
    # A request many times the device is another bug's symptom, whatever the wording.
    Rule("absurd_request", _absurd),
    # ... and a process said to hold more than any GPU has: the count is broken, not full.
    Rule("broken_memory_accounting", _broken_accounting),
    # One allocation over an Intel GPU's per-allocation cap, with room on the card.
    Rule("xpu_allocation_size_cap", _xpu_size_cap),
    # A serving engine's KV pool refusing a batch it printed room for.
    Rule("kv_pool_accounting", _kv_pool_not_full),
    # The process itself said the GPU ran out: the most specific evidence a log carries, so
    # it outranks what the pod status adds later. Fragmentation is read from the numbers.
    Rule("gpu_memory", _gpu),
    # /dev/shm ran out: host RAM may be plentiful, so it comes before the OOM killer.
    Rule("shared_memory", _shm),
    # The kernel's OOM killer, the kubelet's OOMKilled or memory eviction, Ray's or Dask's
    # memory monitor: host or cgroup memory.
    Rule("host_memory", _host),
    # The kubelet's own SIGKILL after failed liveness probes: no memory problem.
    Rule("liveness_probe", _liveness),
    # Evicted for disk or PIDs: the kubelet's SIGKILL (exit code 137) has a known cause.
    Rule("evicted_not_memory", _evicted_not_memory),
    # Killed after a stop someone asked for (a restart, a delete, a preemption).
    Rule("stop_requested", _stopped),
    # The OS killed it for a code page whose signature failed (macOS's "Killed: 9").
    Rule("code_signing_kill", _code_signing),
    # A launcher killed its workers after one exited with its own, non-SIGKILL status.
    Rule("launcher_child_exit", _launcher_child_exit),
    # Killed, and more memory (a bigger machine, a higher limit) made the job pass: the kill
    # was for memory.
    Rule("kill_cured_by_memory", _cured_by_memory),
    # A launcher killed its workers, and the failure it answered is in the log.
    Rule("teardown_after_failure", _teardown_after_failure),
    # Killed by SIGKILL (137, -9, "Killed") and nothing says why: say so, and how to find out.
    Rule("sigkill", _sigkill),
    # A known failure that is not about memory: name it, so its own advice can follow.
    Rule("other_failure", _negative),
    # A supervisor (Ray, Jupyter) saw its worker die and names no cause: died, cause unknown.
    Rule("worker_died", _worker_died),
    # An OOM reported in words only, with the card or the host named around it: say which,
    # at low confidence.
    Rule("oom_told_in_words", _told_in_words),
    # A proposal naming out-of-memory only as a risk to avoid: not an OOM, at low confidence.
    Rule("oom_only_a_risk", _only_a_risk),
    # Memory words and no family that explains them: say so, never "not an OOM".
    Rule("cannot_tell", _cannot_tell),
    Rule("nothing", _nothing),
)


def decide(facts: Facts) -> Verdict:
    """The verdict of the first rule that gives one."""
    for rule in RULES:
        if (verdict := rule.judge(facts)) is not None:
            return verdict
    return _nothing(facts)
