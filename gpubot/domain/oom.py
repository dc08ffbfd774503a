"""OOM triage: classify a failed workload's log and pod status, with evidence and advice."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpubot.domain.oom_advice import advice_for
from gpubot.domain.oom_rules import Facts, OomClass, decide, gather

CLASSES: tuple[OomClass, ...] = (
    "cuda_oom",
    "cuda_oom_fragmentation",
    "host_oom_killed",
    "shm_exhausted",
    "not_oom",
)


@dataclass(frozen=True)
class Triage:
    """The verdict: its class, the lines and facts it rests on, what to do, and the numbers."""

    cls: OomClass
    evidence: tuple[str, ...]
    advice: tuple[str, ...]
    numbers: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "class": self.cls,
            "evidence": list(self.evidence),
            "advice": list(self.advice),
            "numbers": dict(self.numbers),
        }


def _evidence(cls: OomClass, facts: Facts) -> tuple[str, ...]:
    lines = {
        "cuda_oom": facts.gpu_oom,
        "cuda_oom_fragmentation": facts.gpu_oom,
        "shm_exhausted": facts.shm,
        "host_oom_killed": facts.host_oom,
        "not_oom": (),
    }[cls]
    extra: list[str] = []
    if facts.reason:
        extra.append(f"reason: {facts.reason}")
    if facts.exit_code is not None:
        extra.append(f"exit code: {facts.exit_code}")
    if facts.liveness_failed:
        extra.append("liveness probe failed (the kubelet killed the container)")
    return (*lines, *extra)


def classify(
    text: str,
    *,
    exit_code: int | None = None,
    reason: str | None = None,
    shm_bytes: int | None = None,
    liveness_failed: bool = False,
) -> Triage:
    """Classify `text` (container log, dmesg, kubectl describe) plus the pod's status."""
    facts = gather(
        text,
        exit_code=exit_code,
        reason=reason,
        shm_bytes=shm_bytes,
        liveness_failed=liveness_failed,
    )
    cls = decide(facts)
    return Triage(
        cls=cls,
        evidence=_evidence(cls, facts),
        advice=advice_for(cls, facts),
        numbers=dict(facts.numbers),
    )
