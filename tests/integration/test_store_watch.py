"""Word of another process's writes, on real PostgreSQL: a store watching its schema hears a
write committed by another store on that schema (a second replica, the CLI), not its own
writes and not a store in another schema; on SQLite it says it cannot tell.

Order is what proves a write was not heard: PostgreSQL delivers notifications in commit
order on the watching connection, so once the later write's notification has arrived, one
for an earlier write would have come before it.
"""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import create_engine, text

from gpubot.backends.store import SqlStore, open_store
from gpubot.backends.store.trail_watch import TrailWatch
from gpubot.domain.control.audit import AuditDraft

if TYPE_CHECKING:
    from tests.integration.conftest import Database


T0 = datetime(2026, 12, 2, 8, 0, tzinfo=UTC)
HEARD_WITHIN_S = 30.0  # a bound for a busy machine, not a measure of latency


def draft(kind: str = "run.created") -> AuditDraft:
    return AuditDraft(ts=T0, actor="gpubot", kind=kind, run_id=f"run-{uuid.uuid4().hex[:10]}")


class Wakes:
    def __init__(self) -> None:
        self.count = 0
        self._changed = threading.Condition()

    def __call__(self) -> None:
        with self._changed:
            self.count += 1
            self._changed.notify_all()

    def reach(self, n: int) -> int:
        """The count once it is at least `n` (or the bound has passed)."""
        with self._changed:
            self._changed.wait_for(lambda: self.count >= n, timeout=HEARD_WITHIN_S)
            return self.count


def _watching(store: SqlStore, wakes: Wakes) -> TrailWatch:
    assert store.watch_writes(wakes) is True
    watch = store._watches[-1]
    assert watch.listening.wait(HEARD_WITHIN_S), "the watch never began to LISTEN"
    return watch


def _until_heard(watch: TrailWatch, writer: SqlStore) -> list[str]:
    """The tokens heard, once `writer`'s is among them (or the bound has passed)."""
    done = threading.Event()
    for _ in range(int(HEARD_WITHIN_S * 20)):
        if writer._token in watch.heard:
            break
        done.wait(0.05)
    return list(watch.heard)


# The database fixture, on PostgreSQL only: SQLite has no notifications (the last test).
on_postgres = pytest.mark.parametrize(
    "database", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)


@on_postgres
async def test_a_write_by_another_store_on_the_schema_wakes_the_watch(database: Database) -> None:
    leader, other = database.open(), database.open()
    wakes = Wakes()
    _watching(leader, wakes)
    await other.append(draft())
    assert wakes.reach(1) == 1


@on_postgres
async def test_its_own_writes_do_not_wake_the_watch(database: Database) -> None:
    leader, other = database.open(), database.open()
    wakes = Wakes()
    watch = _watching(leader, wakes)
    await leader.append(draft("step.started"))
    await leader.append(draft("step.completed"))
    await other.append(draft())  # delivered after the leader's own
    assert _until_heard(watch, other) == [leader._token, leader._token, other._token]
    assert wakes.reach(1) == 1  # the other's write woke it; its own two did not


@on_postgres
async def test_a_store_in_another_schema_is_not_heard(
    database: Database, postgres_url: str
) -> None:
    leader, other = database.open(), database.open()
    elsewhere_schema = f"t_{uuid.uuid4().hex[:12]}"
    elsewhere = open_store(postgres_url, schema=elsewhere_schema)
    try:
        wakes = Wakes()
        watch = _watching(leader, wakes)
        await elsewhere.append(draft())
        await other.append(draft())
        assert _until_heard(watch, other) == [other._token]  # nothing from the other schema
        assert wakes.reach(1) == 1
    finally:
        elsewhere.dispose()
        cleanup = create_engine(postgres_url)
        with cleanup.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{elsewhere_schema}" CASCADE'))
        cleanup.dispose()


@on_postgres
async def test_the_watch_comes_back_after_its_connection_is_killed(database: Database) -> None:
    """A backend killed under the watch (a failover, an operator's pg_terminate_backend):
    it LISTENs again on a new connection and hears the next write."""
    leader, other = database.open(), database.open()
    wakes = Wakes()
    _watching(leader, wakes)
    watch = leader._watches[-1]
    first = watch.listens
    killed = database.scalar(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = :listen",
        listen=f'LISTEN "gpubot_store_{database.schema}"',
    )
    assert killed == 1
    ready = threading.Event()
    for _ in range(int(HEARD_WITHIN_S * 10)):  # until a new connection listens
        if watch.listens > first and watch.listening.is_set():
            ready.set()
            break
        ready.wait(0.1)
    assert ready.is_set(), "the watch did not listen again"
    await other.append(draft())
    assert wakes.reach(1) >= 1


def test_sqlite_cannot_tell(tmp_path: object) -> None:
    store = open_store(f"sqlite:///{tmp_path}/gpubot.db")
    try:
        assert store.watch_writes(lambda: None) is False
    finally:
        store.dispose()
