"""The hash-chained audit trail in SQL: append under the head row's lock, verify in one read."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from gpubot.backends.store.database import SqlDatabase, json_roundtrip
from gpubot.backends.store.prepared import Prepared, Record
from gpubot.backends.store.tables import audit, audit_head, runs
from gpubot.domain.control.audit import (
    GENESIS_HASH,
    Anchor,
    AuditDraft,
    AuditEvent,
    AuditKeyError,
    AuditTrailError,
    ChainHead,
    ChainProblem,
    chain_hash,
    head_is_sealed,
    head_problems,
    key_id,
    key_mismatch,
    seal_head,
    verify_trail,
)
from gpubot.domain.instants import as_utc

# Said with every refused append: where to look, and the deliberate way back.
_SEE = "run `gpubot audit verify`; `gpubot audit reseal` restarts the head from the last event"


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
        after_seq: int | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[AuditEvent]:
        query = select(audit).order_by(audit.c.seq)
        if after_seq is not None:  # the primary key: what was appended since a look
            query = query.where(audit.c.seq > after_seq)
        if kinds is not None:
            query = query.where(audit.c.kind.in_(list(kinds)))
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

    async def incident_trail(self, incident_id: str) -> tuple[list[AuditEvent], ChainHead | None]:
        """An incident's events and the chain's head, read in one transaction (one snapshot):
        what a run's end shows in its thread and logs as an anchor."""

        def read(conn: Connection) -> tuple[list[AuditEvent], ChainHead | None]:
            return self._incident_events(conn, incident_id), self._head(conn)

        return await self._run(read, write=False, snapshot=True)

    @staticmethod
    def _incident_events(conn: Connection, incident_id: str) -> list[AuditEvent]:
        return [_event(row) for row in _INCIDENT_EVENTS.rows(conn, {"incident_id": incident_id})]

    async def verify(self) -> list[ChainProblem]:
        problems, _head = await self.check()
        return problems

    async def check(
        self, *, anchor: Anchor | None = None
    ) -> tuple[list[ChainProblem], ChainHead | None]:
        """Every link, the head row (present, naming the last event, sealed with the key)
        and, given one, an anchor recorded outside the database; with the head they were
        checked against."""
        # Events and head must come from one snapshot, or an append landing between the two
        # reads would look like a tampered head.
        return await self._run(lambda conn: self._check(conn, anchor), write=False, snapshot=True)

    async def head(self) -> ChainHead | None:
        """The head row as stored (None when it is missing): one primary-key read, cheap
        enough to log after every run and to show in the incident thread."""
        return await self._run(self._head, write=False)

    async def check_key(self) -> None:
        """AuditKeyError, one line, when this process's key is not the one the chain is
        sealed with; checked before anything is written (the break-glass CLI) and by the
        readiness probe. A missing head is verify's to report, not this check's."""
        head = await self.head()
        if head is not None and (mismatch := key_mismatch(head, key=self._audit_key)):
            raise AuditKeyError(mismatch)

    async def reseal(self, draft: AuditDraft) -> tuple[ChainHead | None, AuditEvent]:
        """After `verify` reported the head (missing, not naming the last event, not sealed
        with this key): point it at the last event, seal it, and append `draft` (kind
        audit.resealed) saying what the head was, in one transaction. Returns the old head.

        Deliberate and recorded, never automatic: a cut tail stays visible in this event
        and in the anchors outside the database (thread summaries, log lines)."""
        stored = as_stored(draft)
        return await self._run(lambda conn: self._reseal(conn, stored), write=True)

    def _append(self, conn: Connection, draft: AuditDraft) -> AuditEvent:
        # FOR UPDATE queues concurrent appenders on PostgreSQL (SQLite renders nothing here;
        # its writers are serialised by the process lock and BEGIN IMMEDIATE).
        head = _held_head(conn) or _HEAD_FOR_UPDATE.first(conn)
        if head is None:
            # Re-creating it would restart the chain and hide whatever removed it.
            count = conn.scalar(select(func.count()).select_from(audit))
            raise AuditTrailError(
                f"the audit_head row is missing while {count} events exist: "
                f"refusing to append; {_SEE}"
            )
        seq, prev_hash = int(head["seq"]) + 1, str(head["hash"])
        mismatch = key_mismatch(
            ChainHead(seq - 1, prev_hash, key_id=str(head["key_id"])), key=self._audit_key
        )
        if mismatch is not None:
            # Rows hashed under another key (or none) would fail every later verify.
            raise AuditKeyError(mismatch)
        if self._audit_key and not head_is_sealed(
            ChainHead(seq - 1, prev_hash, str(head["seal"])), key=self._audit_key
        ):
            # Chaining on would seal a head moved back without the key, and hide the cut.
            raise AuditTrailError(
                f"the audit chain head (seq {seq - 1}) is not authenticated by "
                f"GPUBOT_AUDIT_KEY: refusing to append; {_SEE}"
            )
        digest = chain_hash(draft, seq=seq, prev_hash=prev_hash, key=self._audit_key)
        event = AuditEvent(**_fields(draft), seq=seq, prev_hash=prev_hash, hash=digest)
        try:
            _INSERT.run(
                conn, {**_fields(event), "seq": seq, "prev_hash": prev_hash, "hash": digest}
            )
        except IntegrityError as exc:
            # Appenders queue on the head row, so seq is taken only if the head went back.
            raise AuditTrailError(
                f"audit event seq {seq} already exists but the chain head says seq {seq - 1}: "
                f"the head was moved back; refusing to append; {_SEE}"
            ) from exc
        seal = seal_head(seq, digest, key=self._audit_key)
        _MOVE_HEAD.run(conn, {"new_seq": seq, "new_hash": digest, "new_seal": seal})
        _hold_head(conn, {"seq": seq, "hash": digest, "seal": seal, "key_id": head["key_id"]})
        return event

    def _head(self, conn: Connection) -> ChainHead | None:
        if (held := _held_head(conn)) is not None:  # this transaction's own last append
            return ChainHead(
                int(held["seq"]), str(held["hash"]), str(held["seal"]), str(held["key_id"])
            )
        # An older database opened read-only may lack the seal (read as None) or the key_id
        # (read as "": unkeyed) column.
        columns = self._head_columns
        row = _read_head(tuple(name for name in ("seal", "key_id") if name in columns)).first(conn)
        if row is None:
            return None
        seal = str(row["seal"]) if "seal" in columns else None
        named = str(row["key_id"]) if "key_id" in columns else ""
        return ChainHead(int(row["seq"]), str(row["hash"]), seal, named)

    def _last(self, conn: Connection) -> ChainHead:
        row = conn.execute(
            select(audit.c.seq, audit.c.hash).order_by(audit.c.seq.desc()).limit(1)
        ).first()
        return ChainHead(int(row.seq), str(row.hash)) if row else ChainHead(0, GENESIS_HASH)

    def _check(
        self, conn: Connection, anchor: Anchor | None
    ) -> tuple[list[ChainProblem], ChainHead | None]:
        events = [
            _event(row) for row in conn.execute(select(audit).order_by(audit.c.seq)).mappings()
        ]
        head = self._head(conn)
        problems = verify_trail(events, head=head, key=self._audit_key, anchor=anchor)
        if not events and not problems:
            # No key and a head reset to genesis: only the runs are left to tell.
            n = conn.scalar(select(func.count()).select_from(runs)) or 0
            if n:
                problems.append(
                    ChainProblem(None, f"table empty but {n} runs exist: every event was deleted")
                )
        return problems, head

    def _reseal(self, conn: Connection, draft: AuditDraft) -> tuple[ChainHead | None, AuditEvent]:
        conn.info.pop(_HELD_HEAD, None)  # the head is rewritten here, not by an append
        old = self._head(conn)
        last = self._last(conn)
        seal = seal_head(last.seq, last.hash, key=self._audit_key)
        named = key_id(self._audit_key)  # resealing adopts this process's key, on the record
        values = {"seq": last.seq, "hash": last.hash, "seal": seal, "key_id": named}
        if old is None:
            conn.execute(insert(audit_head).values(id=1, **values))
        else:
            conn.execute(update(audit_head).where(audit_head.c.id == 1).values(**values))
        previous: dict[str, Any] = (
            {"head": "missing"}
            if old is None
            else {
                "head": {"seq": old.seq, "hash": old.hash},
                "sealed": head_is_sealed(old, key=self._audit_key),
                "key_id": old.key_id,
            }
        )
        count = conn.scalar(select(func.count()).select_from(audit)) or 0
        found = head_problems(old, last=last, count=count)
        noted = replace(
            draft,
            args={**draft.args, "previous": previous},
            result={
                **draft.result,
                "head": {"seq": last.seq, "hash": last.hash},
                "key_id": named,
                "problems": [str(p) for p in found],
            },
        )
        return old, self._append(conn, as_stored(noted))


_DRAFT_FIELDS = tuple(AuditDraft.__dataclass_fields__)
# An append (several per step) runs these three, compiled once per dialect.
_HEAD_FOR_UPDATE = Prepared(
    select(audit_head.c.seq, audit_head.c.hash, audit_head.c.seal, audit_head.c.key_id)
    .where(audit_head.c.id == 1)
    .with_for_update()
)
_INSERT = Prepared(insert(audit))
_MOVE_HEAD = Prepared(
    update(audit_head)
    .where(audit_head.c.id == 1)
    .values(seq=bindparam("new_seq"), hash=bindparam("new_hash"), seal=bindparam("new_seal"))
)
_INCIDENT_EVENTS = Prepared(
    select(audit).where(audit.c.incident_id == bindparam("incident_id")).order_by(audit.c.seq)
)


# The head row as this transaction's last append left it. A write group appends several
# events in one transaction, and the row it holds (FOR UPDATE on PostgreSQL, the write lock
# on SQLite) changes only through that transaction until it ends: each append after the
# first starts from what the one before wrote instead of reading the row again. Keyed by
# the transaction itself, so a new transaction (a retry, the next group) reads the row.
_HELD_HEAD = "gpubot.audit_head_held"


def _held_head(conn: Connection) -> Mapping[str, Any] | None:
    held = conn.info.get(_HELD_HEAD)
    if held is not None and held[0] is conn.get_transaction():
        return held[1]  # type: ignore[no-any-return]
    return None


def _hold_head(conn: Connection, row: Mapping[str, Any]) -> None:
    conn.info[_HELD_HEAD] = (conn.get_transaction(), row)


@functools.cache
def _read_head(extra: tuple[str, ...]) -> Prepared:
    """The head row's seq and hash, and those of its `extra` columns the database has."""
    columns = [getattr(audit_head.c, name) for name in extra]
    return Prepared(
        select(audit_head.c.seq, audit_head.c.hash, *columns).where(audit_head.c.id == 1)
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


def _event(row: Record) -> AuditEvent:
    fields = {name: row[name] for name in _DRAFT_FIELDS}
    return AuditEvent(**fields, seq=row["seq"], prev_hash=row["prev_hash"], hash=row["hash"])
