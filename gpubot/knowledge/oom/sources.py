"""An OOM verdict from every source an incident has: the log, the node's kernel log, metrics, spec.

The log's verdict comes first. The node's kernel log around the death is read for an OOM
killer line that names the pod's cgroup (its UID): that is decisive where the log alone could
not tell (a bare SIGKILL, memory words without a family, nothing at all). The container's
memory working set against its limit, the GPU's framebuffer use before the death and the
pod's /dev/shm size agree with the verdict, disagree with it, or say nothing; on Slurm, the
job's accounting state does too, and it decides a bare SIGKILL that Slurm recorded with a
cause of its own (a time limit, a preemption, a cancel, a node failure; OUT_OF_MEMORY is the
job's memory cgroup). A source that could not be read is named as missing. Pure: the action
gathers, this judges.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from gpubot.knowledge.oom.scan import Confidence, OomClass, lines_matching, log_lines
from gpubot.knowledge.oom.triage import Triage, clip

Status = Literal["agrees", "disagrees", "silent", "missing", "decides"]
# Kernel lines that report an OOM kill (the victim, or the cgroup the kill was charged to).
_KERNEL_OOM = re.compile(
    r"Memory cgroup out of memory|Out of memory: Kill|\boom-kill:|oom_kill_process"
    r"|invoked oom-killer|\bKilled process \d{1,10}\b",
    re.ASCII | re.IGNORECASE,
)
_UID = re.compile(r"[0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}")
# Verdicts the log gives when it cannot say what ended the process.
_UNDECIDED: frozenset[OomClass] = frozenset({"killed_unknown", "cannot_tell", "not_oom"})
NEAR_LIMIT = 0.95  # a working set this close to the limit is at it (the kernel reclaims first)
GPU_FULL = 0.95


@dataclass(frozen=True)
class Sources:
    """What the incident's other sources said; None where a source could not be read."""

    kernel_log: str | None = None
    pod_uid: str = ""
    working_set_bytes: float | None = None
    memory_limit_bytes: int | None = None
    gpu_used_mib: float | None = None
    gpu_total_mib: float | None = None
    shm_bytes: int | None = None
    # Slurm's accounting state for the job (sacct's State: OUT_OF_MEMORY, TIMEOUT, ...): read
    # only for a Slurm job (`on_slurm`); None there when Slurm could not say.
    on_slurm: bool = False
    job_state: str | None = None


@dataclass(frozen=True)
class Finding:
    """One source's word on the verdict."""

    source: str
    status: Status
    says: str

    def as_json(self) -> dict[str, str]:
        return {"source": self.source, "status": self.status, "says": self.says}


@dataclass(frozen=True)
class Combined:
    """The verdict after every source, and what each source said."""

    cls: OomClass
    family: str
    confidence: Confidence
    evidence: tuple[str, ...]
    findings: tuple[Finding, ...]
    kernel_lines: tuple[str, ...] = ()  # the kernel's OOM lines for this pod, whole

    @property
    def agreed(self) -> tuple[str, ...]:
        return tuple(f.source for f in self.findings if f.status in ("agrees", "decides"))

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(f.source for f in self.findings if f.status == "missing")

    def as_json(self) -> dict[str, Any]:
        return {
            "sources": [f.as_json() for f in self.findings],
            "sources_agreed": list(self.agreed),
            "sources_missing": list(self.missing),
        }


def kernel_oom_lines(text: str, *, pod_uid: str) -> tuple[str, ...]:
    """The kernel's OOM-kill lines that name the pod's cgroup (its UID, with - or _), each
    with the OOM lines of the same report just after it (the victim's "Killed process")."""
    if not pod_uid:
        return ()
    wanted = pod_uid.lower().replace("_", "-")
    lines = log_lines(text)
    oom = set(lines_matching(_KERNEL_OOM, lines))
    out: dict[str, None] = {}
    for i, line in enumerate(lines):
        if line not in oom:
            continue
        named = (m.group(0).replace("_", "-") for m in _UID.finditer(line.lower()))
        if wanted in named:
            out[line] = None
            out.update((after, None) for after in lines[i + 1 : i + 4] if after in oom)
    return tuple(out)


def _kernel(triage: Triage, s: Sources) -> tuple[Finding, tuple[str, ...]]:
    if s.kernel_log is None:
        return Finding("kernel_log", "missing", "the node's kernel log could not be read"), ()
    lines = kernel_oom_lines(s.kernel_log, pod_uid=s.pod_uid)
    if not lines:
        return Finding("kernel_log", "silent", "no OOM kill of this pod around its death"), ()
    says = "the kernel's OOM killer killed this pod's process"
    if triage.cls == "host_oom_killed":
        return Finding("kernel_log", "agrees", says), lines
    if triage.cls in _UNDECIDED:
        return Finding("kernel_log", "decides", says), lines
    return Finding("kernel_log", "disagrees", says), lines


def _memory(cls: OomClass, s: Sources) -> Finding:
    if s.working_set_bytes is None or not s.memory_limit_bytes:
        return Finding("memory_working_set", "missing", "no working set or no memory limit")
    share = s.working_set_bytes / s.memory_limit_bytes
    says = f"working set peaked at {share:.0%} of the {s.memory_limit_bytes >> 20} MiB limit"
    at_limit = share >= NEAR_LIMIT
    if cls == "host_oom_killed":
        return Finding("memory_working_set", "agrees" if at_limit else "silent", says)
    return Finding("memory_working_set", "disagrees" if at_limit else "silent", says)


def _gpu(cls: OomClass, s: Sources) -> Finding:
    if s.gpu_used_mib is None or not s.gpu_total_mib:
        return Finding("gpu_memory", "missing", "no framebuffer use before the death")
    share = s.gpu_used_mib / s.gpu_total_mib
    says = f"GPU framebuffer peaked at {share:.0%} of {s.gpu_total_mib:.0f} MiB"
    if cls in ("cuda_oom", "cuda_oom_fragmentation"):
        return Finding("gpu_memory", "agrees" if share >= GPU_FULL else "silent", says)
    return Finding("gpu_memory", "silent", says)


def _shm(cls: OomClass, s: Sources) -> Finding:
    if s.shm_bytes is None:
        return Finding("shm_size", "missing", "the pod's /dev/shm size is not known")
    says = f"/dev/shm is {s.shm_bytes >> 20} MiB"  # noqa: S108 (a size, not a path)
    small = s.shm_bytes <= 64 << 20  # the container runtime's default
    return Finding("shm_size", "agrees" if cls == "shm_exhausted" and small else "silent", says)


# Slurm states that end a job for a cause of their own, and what that cause is.
_SLURM_CAUSE: dict[str, str] = {
    "TIMEOUT": "its time limit",
    "DEADLINE": "its deadline",
    "PREEMPTED": "a preemption",
    "CANCELLED": "a cancel request",
    "NODE_FAIL": "its node failing",
    "BOOT_FAIL": "its node failing to boot",
}
_OOM_CLASSES: frozenset[OomClass] = frozenset(
    {"cuda_oom", "cuda_oom_fragmentation", "host_oom_killed", "shm_exhausted"}
)


def _accounting(cls: OomClass, s: Sources) -> Finding | None:
    """Slurm's accounting state's word on the verdict; None for a job that is not Slurm's."""
    if not s.on_slurm:
        return None
    state = (s.job_state or "").split(" ")[0].upper()  # "CANCELLED by 1000" as sacct prints it
    if not state:
        return Finding("job_accounting", "missing", "Slurm's accounting state is not known")
    if state == "OUT_OF_MEMORY":
        says = "Slurm recorded the job OUT_OF_MEMORY (its memory cgroup's OOM kill)"
        if cls == "host_oom_killed":
            return Finding("job_accounting", "agrees", says)
        return Finding("job_accounting", "decides" if cls in _UNDECIDED else "disagrees", says)
    cause = _SLURM_CAUSE.get(state)
    if cause is None:
        return Finding("job_accounting", "silent", f"Slurm recorded the job {state}")
    says = f"Slurm recorded the job {state}: it was ended by {cause}"
    if cls == "killed_unknown":
        return Finding("job_accounting", "decides", says)
    # A real OOM may still be what a cancel followed (slurmstepd cancels a step after an OOM
    # kill): the state does not overrule the log's evidence.
    return Finding("job_accounting", "silent", says)


def combine(triage: Triage, sources: Sources) -> Combined:
    """The log's verdict, decided by the kernel log where the log could not tell, with what
    every source said."""
    log = Finding("log", "agrees", f"{triage.cls} ({triage.family}, {triage.confidence})")
    kernel, kernel_lines = _kernel(triage, sources)
    cls, family, confidence = triage.cls, triage.family, triage.confidence
    evidence = triage.evidence
    accounting = _accounting(cls, sources)
    if kernel.status == "decides":
        cls, family, confidence = "host_oom_killed", "kernel_oom_killer_for_pod", "high"
        evidence = (*(clip(line) for line in kernel_lines[-4:]), *evidence)
        accounting = _accounting(cls, sources)
    elif accounting is not None and accounting.status == "decides":
        if "OUT_OF_MEMORY" in accounting.says:
            cls, family, confidence = "host_oom_killed", "slurm_out_of_memory", "high"
        else:
            cls, family, confidence = "not_oom", "slurm_job_ended_for_cause", "medium"
        evidence = (accounting.says, *evidence)
    findings = (
        log,
        kernel,
        _memory(cls, sources),
        _gpu(cls, sources),
        _shm(cls, sources),
        *((accounting,) if accounting is not None else ()),
    )
    return Combined(cls, family, confidence, evidence, findings, kernel_lines)
