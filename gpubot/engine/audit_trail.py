"""The one place the engine writes audit events: each is stamped with the engine's clock and
appended to the chain, or handed back as a draft that goes in with the state it records."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpubot.domain.control.audit import AuditDraft, AuditEvent
from gpubot.engine.telemetry import NoTally, Tally
from gpubot.ports import AuditLog, Clock


class AuditTrail:
    """Writes what the engine did, and what it refused, to the hash-chained audit log."""

    def __init__(self, log: AuditLog, clock: Clock, tally: Tally | None = None) -> None:
        self._log = log
        self._clock = clock
        self._tally = tally or NoTally()  # an append that fails counts as an audit error

    def draft(
        self,
        kind: str,
        *,
        actor: str,
        incident_id: str | None = None,
        run_id: str | None = None,
        step: str | None = None,
        action: str | None = None,
        target: str | None = None,
        args: Mapping[str, Any] | None = None,
        result: Mapping[str, Any] | None = None,
        reason: str = "",
        dry_run: bool = False,
    ) -> AuditDraft:
        """An event to write in the same transaction as the state it records (a run created,
        a step's new state): the store appends it with that state, or not at all."""
        return AuditDraft(
            ts=self._clock.now(),
            actor=actor,
            kind=kind,
            incident_id=incident_id,
            run_id=run_id,
            step=step,
            action=action,
            target=target,
            args=dict(args or {}),
            result=dict(result or {}),
            reason=reason,
            dry_run=dry_run,
        )

    async def record(self, kind: str, *, actor: str, **fields: Any) -> AuditEvent:
        """An event on its own, appended to the chain now; `fields` as draft() takes them."""
        return await self.write(self.draft(kind, actor=actor, **fields))

    async def write(self, draft: AuditDraft) -> AuditEvent:
        """A draft built here (draft()) that no state change carries: appended now."""
        try:
            return await self._log.append(draft)
        except Exception:
            self._tally.dependency_error(dependency="audit")
            raise
