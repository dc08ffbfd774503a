"""Evidence older than evidence.keep_days is deleted by the leader, on the record."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from gpubot.engine.audit_trail import AuditTrail
from gpubot.errors import GpubotError
from gpubot.ports import Clock, Store

log = logging.getLogger(__name__)
PRUNE_EVERY = timedelta(hours=1)


class EvidencePruner:
    """Deletes bundles older than `keep_days` (0: keeps every one), at most once per
    PRUNE_EVERY on the clock; each pruning is one evidence.pruned audit event."""

    def __init__(self, store: Store, clock: Clock, *, keep_days: int) -> None:
        self._store = store
        self._clock = clock
        self._trail = AuditTrail(store, clock)
        self._keep = timedelta(days=keep_days) if keep_days > 0 else None
        self._last: datetime | None = None

    async def maybe_prune(self) -> list[int]:
        """The ids deleted now (none: not due, nothing that old, or keeping all)."""
        now = self._clock.now()
        if self._keep is None or (self._last is not None and now - self._last < PRUNE_EVERY):
            return []
        self._last = now
        before = now - self._keep
        try:
            pruned = await self._store.prune_evidence(
                before=before,
                audit=self._trail.draft(
                    "evidence.pruned",
                    actor="system",
                    args={"keep_days": self._keep.days},
                    reason=f"evidence.keep_days: older than {self._keep.days} days",
                ),
            )
        except GpubotError as exc:  # the audit trail refuses (said by verify): kept, try later
            log.warning("evidence not pruned: %s", exc)
            return []
        if pruned:
            log.info(
                "evidence pruned: %d bundle(s) created before %s (evidence.keep_days %d)",
                len(pruned),
                before.isoformat(),
                self._keep.days,
            )
        return pruned
