"""The per-GPU health ledger in the store: append-only rows, read back in id order."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, or_, select

from gpubot.backends.store.database import SqlDatabase
from gpubot.backends.store.tables import gpu_events
from gpubot.domain.gpus.ledger import SYSTEM, GpuEvent, new_event
from gpubot.domain.instants import as_utc
from gpubot.errors import InputError

HISTORY_LIMIT = 1000  # a GPU with more events than this shows its newest ones


def _event(row: Any) -> GpuEvent:
    return GpuEvent(
        id=int(row.id),
        at=row.at,
        uuid=str(row.uuid),
        node=str(row.node),
        kind=row.kind,
        pci_bus_id=str(row.pci_bus_id),
        gpu_index=row.gpu_index,
        xid=row.xid,
        incident_id=row.incident_id,
        run_id=row.run_id,
        result=str(row.result),
        detail=str(row.detail),
        actor=str(row.actor),
    )


class SqlGpuLedger(SqlDatabase):
    """GpuLedger: one insert per event; shared by every replica through the database."""

    async def record_gpu_event(
        self,
        *,
        uuid: str,
        node: str,
        kind: str,
        at: datetime,
        pci_bus_id: str = "",
        gpu_index: int | None = None,
        xid: int | None = None,
        incident_id: str | None = None,
        run_id: str | None = None,
        result: str = "",
        detail: str = "",
        actor: str = SYSTEM,
    ) -> GpuEvent:
        try:
            event = new_event(
                uuid=uuid,
                node=node,
                kind=kind,
                at=at,
                pci_bus_id=pci_bus_id,
                gpu_index=gpu_index,
                xid=xid,
                incident_id=incident_id,
                run_id=run_id,
                result=result,
                detail=detail,
                actor=actor,
            )
        except ValueError as exc:
            raise InputError(f"GPU ledger: {exc}") from exc
        values = event.as_json()
        del values["id"]
        values["at"] = as_utc(event.at)  # as it reads back

        def write(conn: Connection) -> GpuEvent:
            row = conn.execute(insert(gpu_events).values(**values).returning(gpu_events.c.id))
            return GpuEvent(**{**values, "id": int(row.scalar_one())})

        return await self._run(write, write=True)

    async def gpu_history(
        self,
        *,
        uuid: str | None = None,
        node: str | None = None,
        since: datetime | None = None,
        limit: int = HISTORY_LIMIT,
    ) -> list[GpuEvent]:
        """Events of one GPU (`uuid`) or of every GPU seen on `node`, oldest first; both
        given means either. The newest `limit` when there are more."""
        query = select(gpu_events)
        if uuid is not None and node is not None:
            query = query.where(or_(gpu_events.c.uuid == uuid, gpu_events.c.node == node))
        elif uuid is not None:
            query = query.where(gpu_events.c.uuid == uuid)
        elif node is not None:
            query = query.where(gpu_events.c.node == node)
        if since is not None:
            query = query.where(gpu_events.c.at >= since)
        query = query.order_by(gpu_events.c.id.desc()).limit(limit)

        def read(conn: Connection) -> list[GpuEvent]:
            return [_event(row) for row in reversed(conn.execute(query).all())]

        return await self._run(read, write=False)
