"""Runbook runs and the state of each step: what survives a restart."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, NamedTuple


class RunStatus(StrEnum):
    RUNNING = "running"
    WAITING_APPROVAL = "waiting_approval"
    HELD = "held"  # a policy (blast radius, attempt cap) holds the next step
    NEEDS_HUMAN = "needs_human"  # the bot cannot tell whether an interrupted step took effect
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)


class StepStatus(StrEnum):
    PENDING = "pending"
    WAITING_APPROVAL = "waiting_approval"
    APPROVED = "approved"
    HELD = "held"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"
    DENIED = "denied"
    NEEDS_HUMAN = "needs_human"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (
            StepStatus.SUCCEEDED,
            StepStatus.FAILED,
            StepStatus.SKIPPED,
            StepStatus.DENIED,
            StepStatus.CANCELLED,
        )


def new_run_id() -> str:
    return "run-" + secrets.token_hex(5)


@dataclass(frozen=True)
class Run:
    id: str
    runbook: str
    incident_id: str | None
    cluster: str
    target: str | None  # the node the run acts on, for blast radius and attempt caps
    requested_by: str  # "alertmanager", "agent" or a Slack user id
    status: RunStatus
    dry_run: bool
    context: Mapping[str, Any]  # alert labels/annotations and command args the templates see
    created_at: datetime
    updated_at: datetime
    note: str = ""  # why the run is held / waiting / failed, in one line


@dataclass(frozen=True)
class StepState:
    run_id: str
    step_id: str
    position: int
    status: StepStatus = StepStatus.PENDING
    attempts: int = 0
    args: Mapping[str, Any] = field(default_factory=dict)  # rendered when the step started
    output: Mapping[str, Any] = field(default_factory=dict)
    error: str = ""
    started_at: datetime | None = None
    finished_at: datetime | None = None


class RunView(NamedTuple):
    """A run, its steps and whether its incident is open (None: the run has no incident),
    read together in one transaction: what the executor decides each step from."""

    run: Run
    steps: list[StepState]
    incident_open: bool | None
