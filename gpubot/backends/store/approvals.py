"""Approval requests in SQL, with a compare-and-set so simultaneous clicks cannot both win."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, RowMapping, insert, select, update

from gpubot.backends.store.database import SqlDatabase
from gpubot.backends.store.tables import approvals
from gpubot.domain.control.approvals import ApprovalRequest, ApprovalStatus, Vote
from gpubot.domain.instants import as_utc
from gpubot.errors import NotFoundError


class SqlApprovals(SqlDatabase):
    """ApprovalStore."""

    async def create_approval(self, request: ApprovalRequest) -> None:
        values = {"id": request.id, **_mutable_values(request), **_fixed_values(request)}
        await self._run(lambda conn: conn.execute(insert(approvals).values(**values)), write=True)

    async def get_approval(self, approval_id: str) -> ApprovalRequest:
        return await self._run(lambda conn: _get_approval(conn, approval_id), write=False)

    async def replace_approval(self, request: ApprovalRequest, *, expected_votes: int) -> bool:
        """Store the request's new status and votes only if nobody else voted in between."""
        # A single UPDATE ... WHERE: on PostgreSQL a concurrent writer waits for the row
        # lock and then re-checks the WHERE against the winner's row, so it updates nothing.
        change = (
            update(approvals)
            .where(
                approvals.c.id == request.id,
                approvals.c.vote_count == expected_votes,
                approvals.c.status == ApprovalStatus.PENDING.value,
            )
            .values(**_mutable_values(request))
        )
        return await self._run(lambda conn: conn.execute(change).rowcount == 1, write=True)

    async def approvals_for(self, run_id: str) -> list[ApprovalRequest]:
        query = (
            select(approvals)
            .where(approvals.c.run_id == run_id)
            .order_by(approvals.c.created_at, approvals.c.id)
        )
        return await self._run(
            lambda conn: [_approval(row) for row in conn.execute(query).mappings()], write=False
        )


def _get_approval(conn: Connection, approval_id: str) -> ApprovalRequest:
    row = conn.execute(select(approvals).where(approvals.c.id == approval_id)).mappings().first()
    if row is None:
        raise NotFoundError(f"no approval {approval_id}")
    return _approval(row)


def _fixed_values(request: ApprovalRequest) -> dict[str, Any]:
    return {
        "run_id": request.run_id,
        "step_id": request.step_id,
        "level": request.level,
        "approver_group": request.group,
        "requested_by": request.requested_by,
        "created_at": request.created_at,
        "expires_at": request.expires_at,
    }


def _mutable_values(request: ApprovalRequest) -> dict[str, Any]:
    return {
        "status": request.status.value,
        "votes": [
            {"user": v.user, "decision": v.decision, "at": as_utc(v.at).isoformat()}
            for v in request.votes
        ],
        "vote_count": len(request.votes),
    }


def _approval(row: RowMapping) -> ApprovalRequest:
    return ApprovalRequest(
        id=row["id"],
        run_id=row["run_id"],
        step_id=row["step_id"],
        level=row["level"],
        group=row["approver_group"],
        requested_by=row["requested_by"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        status=ApprovalStatus(row["status"]),
        votes=tuple(
            Vote(user=v["user"], decision=v["decision"], at=as_utc(datetime.fromisoformat(v["at"])))
            for v in row["votes"]
        ),
    )
