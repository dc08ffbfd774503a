"""The counts /metrics reads, on SQLite and PostgreSQL: open incidents, unfinished runs by
status, pending approvals and the oldest one's time (timezone-aware UTC on both)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from gpubot.backends.store.stats import SqlStats
from gpubot.domain.control.approvals import ApprovalRequest, ApprovalStatus
from gpubot.domain.fleet.store_counts import StateCounts
from gpubot.domain.runbooks.runs import Run, RunStatus, StepState

if TYPE_CHECKING:
    from tests.integration.conftest import Database

T0 = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


def run(n: int, status: RunStatus) -> Run:
    return Run(
        id=f"run-{n:010d}",
        runbook="xid79",
        incident_id=None,
        cluster="sim",
        target=f"gpu-node-{n:02d}",
        requested_by="U1",
        status=status,
        dry_run=False,
        context={},
        created_at=T0,
        updated_at=T0,
    )


def approval(n: int, *, minutes: int, status: ApprovalStatus) -> ApprovalRequest:
    return ApprovalRequest(
        id=f"ap-{n}",
        run_id=f"run-{n:010d}",
        step_id="drain",
        level="required",
        group="oncall",
        requested_by="alertmanager",
        created_at=T0 + timedelta(minutes=minutes),
        expires_at=T0 + timedelta(minutes=minutes + 30),
        status=status,
    )


async def test_counts_by_status_in_one_read(database: Database) -> None:
    """Finished runs are not counted (their counter is the engine's); only pending approvals
    are, and the oldest of them is the one created first."""
    store = database.open()
    statuses = [RunStatus.WAITING_APPROVAL, RunStatus.WAITING_APPROVAL, RunStatus.HELD]
    statuses += [RunStatus.SUCCEEDED, RunStatus.FAILED]
    for n, status in enumerate(statuses, start=1):
        await store.create_run(
            run(n, status), [StepState(run_id=run(n, status).id, step_id="a", position=0)]
        )
    await store.create_approval(approval(1, minutes=5, status=ApprovalStatus.PENDING))
    await store.create_approval(approval(2, minutes=2, status=ApprovalStatus.PENDING))
    await store.create_approval(approval(4, minutes=0, status=ApprovalStatus.APPROVED))

    counts = await SqlStats(store).state_counts()
    await store.close()

    assert counts.incidents_open == 0
    assert dict(counts.runs) == {"waiting_approval": 2, "held": 1}
    assert counts.approvals_pending == 2
    assert counts.oldest_pending_approval == T0 + timedelta(minutes=2)
    assert counts.oldest_pending_approval is not None
    assert counts.oldest_pending_approval.tzinfo is not None


async def test_an_empty_store_counts_nothing(database: Database) -> None:
    """No rows: every count 0 and no oldest approval (the age gauge then reads 0)."""
    store = database.open()
    counts = await SqlStats(store).state_counts()
    await store.close()

    assert counts == StateCounts()
