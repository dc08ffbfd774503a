"""Writes that queue behind one another share a transaction, and still answer alone, on
SQLite and on PostgreSQL.

The store's writes go through one writer thread; those that arrive while a write is under
way are written together in the next transaction (one BEGIN and COMMIT, and on PostgreSQL
one hold of the audit chain's head row and one WAL flush). A group that fails is written
call by call, so one caller's error never fails another's write and each caller gets its
own result or error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Engine, event

from gpubot.backends.store import SqlStore
from gpubot.backends.store import audit as audit_store
from gpubot.domain.control.audit import AuditDraft
from gpubot.domain.runbooks.runs import Run, RunStatus, StepState
from gpubot.errors import NotFoundError

T0 = datetime(2026, 12, 2, 8, 0, tzinfo=UTC)


def run(n: int) -> Run:
    return Run(
        id=f"run-{n:010d}",
        runbook="xid79",
        incident_id=None,
        cluster="sim",
        target=f"gpu-node-{n}",
        requested_by="alertmanager",
        status=RunStatus.RUNNING,
        dry_run=False,
        context={},
        created_at=T0,
        updated_at=T0,
    )


def event_for(n: int) -> AuditDraft:
    return AuditDraft(ts=T0, actor="gpubot", kind="run.created", run_id=f"run-{n:010d}")


@pytest.fixture
def commits() -> Iterator[list[Any]]:
    seen: list[Any] = []

    def count(conn: Any) -> None:
        seen.append(conn)

    event.listen(Engine, "commit", count)
    yield seen
    event.remove(Engine, "commit", count)


async def test_writes_that_queue_share_one_transaction(store: SqlStore, commits: list[Any]) -> None:
    created = await asyncio.gather(
        *(
            store.create_run(
                run(n),
                [StepState(run_id=run(n).id, step_id="cordon", position=0)],
                audit=event_for(n),
            )
            for n in range(12)
        )
    )
    assert [made for _run, made in created] == [True] * 12
    # Twelve writes, submitted before the first began: far fewer than twelve commits.
    assert len(commits) <= 2
    assert len(await store.list_runs()) == 12
    assert await store.verify() == []  # twelve events, chained in order, one per run


async def test_a_failing_write_fails_alone(store: SqlStore) -> None:
    await store.create_run(run(1), [], audit=event_for(1))
    results = await asyncio.gather(
        store.update_run(run(1).id, status=RunStatus.SUCCEEDED, note="", now=T0),
        store.update_run("run-missing", status=RunStatus.SUCCEEDED, note="", now=T0),
        store.create_run(run(2), [], audit=event_for(2)),
        return_exceptions=True,
    )
    assert results[0].status is RunStatus.SUCCEEDED  # type: ignore[union-attr]
    assert isinstance(results[1], NotFoundError)
    assert results[2][1] is True  # type: ignore[index]
    assert (await store.get_run(run(1).id)).status is RunStatus.SUCCEEDED
    assert {r.id for r in await store.list_runs()} == {run(1).id, run(2).id}
    assert await store.verify() == []


@pytest.fixture
def head_reads(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Each read of the chain's head row by an append (a prepared statement, run on the
    driver's cursor directly, so it is counted where it is run)."""
    seen: list[Any] = []
    read = audit_store._HEAD_FOR_UPDATE.first

    def counted(conn: Any, *args: Any, **kw: Any) -> Any:
        seen.append(conn)
        return read(conn, *args, **kw)

    monkeypatch.setattr(audit_store._HEAD_FOR_UPDATE, "first", counted)
    return seen


async def test_appends_in_one_transaction_read_the_head_row_once(
    store: SqlStore, commits: list[Any], head_reads: list[str]
) -> None:
    events = await asyncio.gather(*(store.append(event_for(n)) for n in range(12)))
    # Each append chains on the one before it in the group, not on a stale head.
    assert [e.seq for e in sorted(events, key=lambda e: e.seq)] == list(range(1, 13))
    assert len(head_reads) <= len(commits) <= 2
    assert await store.verify() == []


async def test_a_reseal_grouped_after_appends_chains_on_the_head_it_wrote(
    store: SqlStore,
) -> None:
    await store.append(event_for(0))
    results = await asyncio.gather(
        store.append(event_for(1)),
        store.append(event_for(2)),
        store.reseal(AuditDraft(ts=T0, actor="operator", kind="audit.resealed", reason="drill")),
        store.append(event_for(3)),
    )
    resealed = results[2][1]  # type: ignore[index]
    after = results[3]
    assert after.seq == resealed.seq + 1  # type: ignore[union-attr]
    assert after.prev_hash == resealed.hash  # type: ignore[union-attr]
    assert await store.verify() == []


async def test_a_runs_end_reports_the_head_its_own_event_moved_to(store: SqlStore) -> None:
    """end_run's head (the thread summary's anchor) is the one its transaction wrote, read
    without a second look at the row, and is what the stored head says afterwards."""
    await store.create_run(run(1), [], audit=event_for(1))
    results = await asyncio.gather(
        store.append(event_for(2)),
        store.end_run(
            run(1).id,
            status=RunStatus.SUCCEEDED,
            note="",
            now=T0,
            audit=AuditDraft(ts=T0, actor="gpubot", kind="run.succeeded", run_id=run(1).id),
        ),
        store.append(event_for(3)),
    )
    _changed, _events, head = results[1]  # type: ignore[misc]
    assert head is not None
    ended = [e for e in await store.events() if e.kind == "run.succeeded"]
    assert (head.seq, head.hash) == (ended[0].seq, ended[0].hash)
    assert await store.verify() == []
