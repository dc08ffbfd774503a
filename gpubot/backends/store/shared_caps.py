"""The blast-radius caps across replicas that execute side by side, on PostgreSQL: cordon
slots reserved under a per-cluster advisory lock, and a session lock for a drain's check."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta

from sqlalchemy import Connection, and_, delete, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.exc import DBAPIError

from gpubot.backends.store.database import SqlDatabase, lock_id
from gpubot.backends.store.tables import cordon_reservations as cr
from gpubot.errors import ConfigError

# A cordon whose replica never said it returned (the replica died during it) is counted for
# this long after its reservation: longer than any cordon call may take.
IN_FLIGHT_AT_MOST = timedelta(minutes=15)
KEEP = timedelta(hours=1)  # rows older than this are deleted when a slot is reserved


class SqlSharedCaps:
    """The SharedCaps port over the replicas' shared PostgreSQL store."""

    def __init__(self, store: SqlDatabase) -> None:
        if not store._postgres:
            raise ConfigError("caps shared between replicas need a PostgreSQL store")
        self._db = store

    async def reserve_cordon(
        self,
        *,
        cluster: str,
        node: str,
        holder: str,
        now: datetime,
        settle: timedelta,
        decide: Callable[[set[str]], str | None],
    ) -> str | None:
        def reserve(conn: Connection) -> str | None:
            conn.execute(select(func.pg_advisory_xact_lock(lock_id("gpubot.cordon:" + cluster))))
            counted = or_(
                and_(cr.c.returned_at.is_(None), cr.c.reserved_at > now - IN_FLIGHT_AT_MOST),
                cr.c.returned_at > now - settle,
            )
            others = set(
                conn.execute(
                    select(cr.c.node).where(cr.c.cluster == cluster, cr.c.holder != holder, counted)
                ).scalars()
            )
            reason = decide(others)
            if reason is not None:
                return reason
            conn.execute(
                delete(cr).where(
                    cr.c.cluster == cluster,
                    func.coalesce(cr.c.returned_at, cr.c.reserved_at) < now - KEEP,
                )
            )
            row = {"cluster": cluster, "node": node, "holder": holder, "reserved_at": now}
            conn.execute(
                pg_insert(cr)
                .values(**row, returned_at=None)
                .on_conflict_do_update(
                    index_elements=[cr.c.cluster, cr.c.node, cr.c.holder],
                    set_={"reserved_at": now, "returned_at": None},
                )
            )
            return None

        return await self._db._run(reserve, write=True)

    async def cordon_returned(self, *, cluster: str, node: str, holder: str, now: datetime) -> None:
        def returned(conn: Connection) -> None:
            conn.execute(
                update(cr)
                .where(cr.c.cluster == cluster, cr.c.node == node, cr.c.holder == holder)
                .values(returned_at=now)
            )

        await self._db._run(returned, write=True)

    @contextlib.asynccontextmanager
    async def exclusive(self, name: str) -> AsyncIterator[None]:
        """A session advisory lock on a connection of its own, held while the block runs; a
        replica that dies holding it loses it with its connection."""
        key = lock_id("gpubot.exclusive:" + name)
        conn = await asyncio.to_thread(self._db._engine.connect)
        try:
            try:
                await asyncio.to_thread(_locked, conn, key)
            except DBAPIError as exc:
                if not exc.connection_invalidated:
                    raise
                # A pooled connection the database had dropped (a restart): once more, anew.
                await asyncio.to_thread(conn.close)
                conn = await asyncio.to_thread(self._db._engine.connect)
                await asyncio.to_thread(_locked, conn, key)
            try:
                yield
            finally:
                await asyncio.to_thread(_unlocked, conn, key)
        finally:
            await asyncio.to_thread(conn.close)


def _locked(conn: Connection, key: int) -> None:
    conn.execute(select(func.pg_advisory_lock(key)))
    conn.commit()


def _unlocked(conn: Connection, key: int) -> None:
    conn.execute(select(func.pg_advisory_unlock(key)))
    conn.commit()
