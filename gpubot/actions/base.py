"""What an action is: typed params, plan() from live state, run(), and check() after a crash."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from gpubot.domain.control.audit import AuditEvent
from gpubot.domain.gpus.escalation import EscalationPolicy
from gpubot.domain.results import Message
from gpubot.ports import Clock, ClusterPorts, EvidenceStore, GpuLedger

P = TypeVar("P", bound=BaseModel)


class Params(BaseModel):
    """Base of every action's parameters: strict, no unknown keys."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


@dataclass(frozen=True)
class ActionContext:
    cluster: ClusterPorts
    clock: Clock
    actor: str  # who caused this: the approver, or "system" for auto steps
    reason: str  # incident / run / step, written where the cluster keeps notes (annotations)
    dry_run: bool = False
    # Progress into the incident thread: the text, and the Slack mentions in it that gpubot
    # built from ids it trusts (everything else in the text is shown as typed).
    say: Callable[[str, tuple[str, ...]], Awaitable[None]] | None = None
    deadline: datetime | None = None  # the step's timeout, on ctx.clock: loops stop by then
    # When the step first started (kept across retries and restarts): durable waits count from it.
    started_at: datetime | None = None
    run_id: str | None = None  # opaque; what a button in the thread may carry
    post: Callable[[Message], Awaitable[None]] | None = None  # a whole message (with buttons)
    # This run's audit events of one kind: durable signals from people, such as an objection.
    run_events: Callable[[str], Awaitable[Sequence[AuditEvent]]] | None = None
    # The per-GPU health ledger (the store) where steps record what happened to a GPU, and
    # the policy that reads it; None where nothing is kept (a plan without a store).
    ledger: GpuLedger | None = None
    escalation: EscalationPolicy = field(default_factory=EscalationPolicy)
    # The DCGM diagnostics level of the node's pool; None: the configured policy.diag_level.
    diag_level: int | None = None
    incident_id: str | None = None  # the run's incident, for the ledger's rows
    # Where evidence bundles are kept (the store), and the step that gathers one.
    evidence: EvidenceStore | None = None
    step_id: str | None = None
    # A plan asks the API server to dry-run its writes, so a refusal (RBAC, an admission
    # webhook) shows before anyone approves; False for a step that runs right after its plan,
    # whose real write is refused the same way.
    probe: bool = True

    async def progress(self, text: str, *, mentions: tuple[str, ...] = ()) -> None:
        """`mentions`: the `<@U…>` / `<!subteam^S…>` in `text` built from a config or Slack
        id, which stay live; the rest of `text` (alert data included) pings nobody."""
        if self.say is not None:
            await self.say(text, mentions)

    async def events(self, kind: str) -> Sequence[AuditEvent]:
        return await self.run_events(kind) if self.run_events is not None else ()


@dataclass(frozen=True)
class PlanNote:
    """What a step would do, read from live state, without side effects."""

    summary: str
    changes: bool = True  # False when live state already matches (the step is a no-op)
    facts: Mapping[str, Any] = field(default_factory=dict)
    warning: str = ""  # what the step already knows it cannot do as planned (Plan.warnings)


@dataclass(frozen=True)
class CheckResult:
    """After a crash mid-step: did the step take effect?"""

    state: Literal["done", "not_done", "unknown"]
    detail: str
    output: Mapping[str, Any] = field(default_factory=dict)


Output = dict[str, Any]


@dataclass(frozen=True)
class ActionSpec(Generic[P]):
    name: str
    description: str
    params: type[P]
    mutating: bool
    plan: Callable[[ActionContext, P], Awaitable[PlanNote]]
    run: Callable[[ActionContext, P], Awaitable[Output]]
    check: Callable[[ActionContext, P], Awaitable[CheckResult]]
    # Whether a runbook may mark the step `auto`: only reversible, safe steps.
    auto_allowed: bool = True
    # Which blast-radius cap the step counts against.
    blast: Literal["cordon", "drain"] | None = None
    # Gathers evidence: when it fails, the node's pool (evidence_required) decides whether
    # the run goes on (the failure is said, not counted against the run) or stops there.
    evidence: bool = False
    # What run() returns, key → meaning, for `steps.<id>.output.<key>` in runbooks; None when
    # undeclared (then nothing checks what a runbook reads from it).
    outputs: Mapping[str, str] | None = None


async def nothing_to_check(ctx: ActionContext, params: BaseModel) -> CheckResult:
    """check() for read-only actions: re-running them is harmless."""
    return CheckResult("not_done", "read-only step; safe to run again")
