"""Aggregate reads for `/metrics`: counts by status, never the rows themselves."""

from __future__ import annotations

from sqlalchemy import Connection, func, select

from gpubot.backends.store.database import SqlDatabase
from gpubot.backends.store.tables import approvals, incidents, runs
from gpubot.domain.control.approvals import ApprovalStatus
from gpubot.domain.fleet.store_counts import StateCounts
from gpubot.domain.incidents.correlation import IncidentStatus
from gpubot.domain.runbooks.runs import RunStatus

# Finished runs only grow; the engine counts them as they end (gpubot_runs_finished_total).
UNFINISHED = tuple(s.value for s in RunStatus if not s.finished)


class SqlStats:
    """StateCounts of a store in one read transaction: three aggregate queries returning a
    row or a few each. It runs through the store's own transaction helper, so it queues
    behind the same locks (a SQLite memory database has one connection for everything)."""

    def __init__(self, db: SqlDatabase) -> None:
        self._db = db

    async def state_counts(self) -> StateCounts:
        return await self._db._run(_read_counts, write=False, snapshot=True)


def _read_counts(conn: Connection) -> StateCounts:
    is_open = incidents.c.status == IncidentStatus.OPEN.value
    open_incidents = conn.execute(
        select(func.count()).select_from(incidents).where(is_open)
    ).scalar_one()
    by_status = conn.execute(
        select(runs.c.status, func.count())
        .where(runs.c.status.in_(UNFINISHED))
        .group_by(runs.c.status)
    ).all()
    pending, oldest = conn.execute(
        select(func.count(), func.min(approvals.c.created_at)).where(
            approvals.c.status == ApprovalStatus.PENDING.value
        )
    ).one()
    return StateCounts(
        incidents_open=int(open_incidents),
        runs={str(status): int(count) for status, count in by_status},
        approvals_pending=int(pending),
        oldest_pending_approval=oldest,
    )
