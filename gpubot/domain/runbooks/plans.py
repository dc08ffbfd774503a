"""A plan: every step of a runbook with its rendered args, approval level and live effect."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpubot.domain.control.pools import PoolChoice


@dataclass(frozen=True)
class PlannedStep:
    id: str
    action: str
    approval: str
    approvers: str | None
    mutating: bool
    args: Mapping[str, Any]
    summary: str  # what it would do, read from live state
    will_run: bool | None = True  # None: depends on earlier steps' results at run time
    when: str | None = None
    problem: str = ""  # why the step could not be planned (bad args, unreachable backend)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "action": self.action,
            "approval": self.approval,
            "approvers": self.approvers,
            "mutating": self.mutating,
            "args": dict(self.args),
            "summary": self.summary,
            "will_run": self.will_run,
            "when": self.when,
            "problem": self.problem,
        }


@dataclass(frozen=True)
class Plan:
    runbook: str
    description: str
    cluster: str
    target: str | None
    params: Mapping[str, Any]
    steps: tuple[PlannedStep, ...]
    incident_id: str | None = None
    problems: tuple[str, ...] = field(default_factory=tuple)
    # What a step already knows it cannot do as planned (DCGM cannot run on the node, say):
    # said before anything runs, without stopping the plan.
    warnings: tuple[str, ...] = field(default_factory=tuple)
    pool: PoolChoice | None = None  # the target node's pool and mode when planned, and why

    def as_json(self) -> dict[str, Any]:
        return {
            "runbook": self.runbook,
            "description": self.description,
            "cluster": self.cluster,
            "target": self.target,
            "incident_id": self.incident_id,
            "params": dict(self.params),
            "steps": [s.as_json() for s in self.steps],
            "problems": list(self.problems),
            "warnings": list(self.warnings),
            "pool": None
            if self.pool is None
            else {**self.pool.pool.as_json(), "why": self.pool.why},
        }
