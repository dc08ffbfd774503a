"""The hash-chained audit trail in SQL: append under the head row's lock, verify in one read."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, RowMapping, bindparam, insert, select, update

from gpubot.backends.store.database import SqlDatabase, json_roundtrip
from gpubot.backends.store.tables import as_utc, audit, audit_head
from gpubot.domain.audit import AuditDraft, AuditEvent, ChainProblem, chain_hash, verify_chain
from gpubot.errors import GpubotError


class SqlAuditLog(SqlDatabase):
    """AuditLog: append-only; `gpubot audit verify` reads it back through verify()."""

    async def append(self, draft: AuditDraft) -> AuditEvent:
        stored = as_stored(draft)
        return await self._run(lambda conn: self._append(conn, stored), write=True)

    async def events(
        self,
        *,
        incident_id: str | None = None,
        run_id: str | None = None,
        action: str | None = None,
        since: datetime | None = None,
    ) -> list[AuditEvent]:
        query = select(audit).order_by(audit.c.seq)
        if incident_id is not None:
            query = query.where(audit.c.incident_id == incident_id)
        if run_id is not None:
            query = query.where(audit.c.run_id == run_id)
        if action is not None:
            query = query.where(audit.c.action == action)
        if since is not None:
            query = query.where(audit.c.ts >= since)
        return await self._run(
            lambda conn: [_event(row) for row in conn.execute(query).mappings()], write=False
        )

    async def verify(self) -> list[ChainProblem]:
        # Events and head must come from one snapshot, or an append landing between the two
        # reads would look like a tampered head.
        return await self._run(self._verify, write=False, snapshot=True)

    def _append(self, conn: Connection, draft: AuditDraft) -> AuditEvent:
        # FOR UPDATE queues concurrent appenders on PostgreSQL (SQLite renders nothing here;
        # its writers are serialised by the process lock and BEGIN IMMEDIATE).
        head = conn.execute(_HEAD_FOR_UPDATE).first()
        if head is None:
            # Re-creating it would restart the chain and hide whatever removed it.
            raise GpubotError("the audit_head row is missing; run `gpubot audit verify`")
        seq, prev_hash = int(head.seq) + 1, str(head.hash)
        digest = chain_hash(draft, seq=seq, prev_hash=prev_hash, key=self._audit_key)
        event = AuditEvent(**_fields(draft), seq=seq, prev_hash=prev_hash, hash=digest)
        conn.execute(
            _INSERT, {**_fields(event), "seq": seq, "prev_hash": prev_hash, "hash": digest}
        )
        conn.execute(_MOVE_HEAD, {"new_seq": seq, "new_hash": digest})
        return event

    def _verify(self, conn: Connection) -> list[ChainProblem]:
        events = [
            _event(row) for row in conn.execute(select(audit).order_by(audit.c.seq)).mappings()
        ]
        head = conn.execute(
            select(audit_head.c.seq, audit_head.c.hash).where(audit_head.c.id == 1)
        ).first()
        if head is None:
            problems = verify_chain(events, key=self._audit_key)
            last = events[-1].seq if events else 0
            return [*problems, ChainProblem(last, "the audit_head row was deleted")]
        return verify_chain(events, key=self._audit_key, head=(int(head.seq), str(head.hash)))


_DRAFT_FIELDS = tuple(AuditDraft.__dataclass_fields__)
# Built once: a statement object keeps its compiled form, so an append (several per step)
# does not build and key three statements each time (half of its cost).
_HEAD_FOR_UPDATE = (
    select(audit_head.c.seq, audit_head.c.hash).where(audit_head.c.id == 1).with_for_update()
)
_INSERT = insert(audit)
_MOVE_HEAD = (
    update(audit_head)
    .where(audit_head.c.id == 1)
    .values(seq=bindparam("new_seq"), hash=bindparam("new_hash"))
)


def _fields(draft: AuditDraft) -> dict[str, Any]:
    return {name: getattr(draft, name) for name in _DRAFT_FIELDS}


def as_stored(draft: AuditDraft) -> AuditDraft:
    """The draft exactly as it will read back, so the hash is computed over that.

    Timestamps come back in UTC and JSON columns come back as plain JSON values, so hashing
    the caller's object (a +02:00 time, a tuple, a datetime in `result`) would not recompute.
    """
    fields = _fields(draft)
    fields["ts"] = as_utc(draft.ts)
    fields["args"] = json_roundtrip(dict(draft.args))
    fields["result"] = json_roundtrip(dict(draft.result))
    return AuditDraft(**fields)


def _event(row: RowMapping) -> AuditEvent:
    fields = {name: row[name] for name in _DRAFT_FIELDS}
    return AuditEvent(**fields, seq=row["seq"], prev_hash=row["prev_hash"], hash=row["hash"])
