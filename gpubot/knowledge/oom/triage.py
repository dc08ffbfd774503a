"""OOM triage: classify a failed workload's log and pod status, with evidence and advice."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, get_args

from gpubot.knowledge.oom.advice import Workload, advice_for, hints, workload
from gpubot.knowledge.oom.scan import Confidence, OomClass, log_lines
from gpubot.knowledge.oom.verdict import decide, gather

CLASSES: tuple[OomClass, ...] = get_args(OomClass)
# What a log can be labelled: every verdict but "cannot tell", which is the absence of one.
LABELS: tuple[OomClass, ...] = tuple(c for c in CLASSES if c != "cannot_tell")
EVIDENCE_CHARS = 400  # per line: enough for any framework's message and its numbers
EVIDENCE_LINES = 8


def clip(line: str, limit: int = EVIDENCE_CHARS) -> str:
    """`line` shortened to about `limit` characters at a word boundary, never mid-word."""
    if len(line) <= limit:
        return line
    cut = line.rfind(" ", 0, limit + 1)
    if cut < limit // 2:  # one very long token (a path, a hash): cut it, but say so
        cut = limit
    return line[:cut].rstrip() + " …"


@dataclass(frozen=True)
class Triage:
    """The verdict: its class and the family of evidence that decided it, how sure, the lines
    it rests on, the message's own hints, what to do, and the numbers."""

    cls: OomClass
    family: str
    confidence: Confidence
    evidence: tuple[str, ...]
    advice: tuple[str, ...]
    hints: tuple[str, ...] = ()
    workload: Workload = "unknown"
    numbers: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "class": self.cls,
            "family": self.family,
            "confidence": self.confidence,
            "workload": self.workload,
            "evidence": list(self.evidence),
            "hints": list(self.hints),
            "advice": list(self.advice),
            "numbers": dict(self.numbers),
        }


def classify(
    text: str,
    *,
    exit_code: int | None = None,
    reason: str | None = None,
    alert_reason: str | None = None,
    shm_bytes: int | None = None,
    liveness_failed: bool = False,
    workload_hint: Workload | None = None,
    device_bytes: int | None = None,
) -> Triage:
    """Classify `text` (container log, dmesg, kubectl describe) plus the pod's status.

    `reason` is the container's last termination reason, `alert_reason` the alert's own
    `reason` label; either saying OOMKilled is a cgroup OOM kill even with an empty log.
    `device_bytes` is the GPU's memory when known from the node, for messages that omit it.
    """
    lines = log_lines(text)
    facts = gather(
        text,
        lines=lines,
        exit_code=exit_code,
        reason=reason,
        alert_reason=alert_reason,
        liveness_failed=liveness_failed,
        device_bytes=device_bytes,
    )
    verdict = decide(facts)
    kind = workload_hint or workload(lines, verdict.cls, verdict.family)
    own_hints = hints("\n".join(verdict.lines)) if verdict.lines else ()
    if not own_hints and verdict.family not in ("no_memory_evidence", "sigkill_cause_unknown"):
        own_hints = hints(lines)
    evidence = tuple(clip(line) for line in verdict.lines[:EVIDENCE_LINES])
    status = facts.status_lines()
    numbers = facts.numbers.as_dict()
    if shm_bytes is not None:
        numbers["shm_bytes"] = shm_bytes
    advice = advice_for(verdict, facts, kind=kind, shm_bytes=shm_bytes)
    if own_hints and verdict.cls != "killed_unknown":
        advice = (*advice, *(f"The message's own hint: {h}" for h in own_hints))
    return Triage(
        cls=verdict.cls,
        family=verdict.family,
        confidence=verdict.confidence,
        evidence=(*evidence, *(s for s in status if s not in evidence)),
        advice=advice,
        hints=own_hints,
        workload=kind,
        numbers=numbers,
    )
