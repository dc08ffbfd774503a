"""Evidence bundles in the store: each kept with its audit event, pruned on the record, and
checked against the sha256 the chain holds (`gpubot audit verify`)."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, inspect, select

from gpubot.backends.store.audit import SqlAuditLog, as_stored
from gpubot.backends.store.tables import audit, evidence
from gpubot.domain.control.audit import AuditDraft, ChainProblem
from gpubot.domain.gpus.evidence import Bundle, StoredEvidence
from gpubot.errors import NotFoundError

STORED, PRUNED = "evidence.stored", "evidence.pruned"
GATHER = "node.gather_evidence"  # the action that keeps a bundle
_LISTED = [c for c in evidence.c if c.name != "content"]


def _stored(row: Any) -> StoredEvidence:
    return StoredEvidence(
        id=int(row.id),
        node=str(row.node),
        cluster=str(row.cluster),
        incident_id=row.incident_id,
        run_id=row.run_id,
        step=row.step,
        created_at=row.created_at,
        size=int(row.size),
        sha256=str(row.sha256),
        parts=tuple(row.parts or ()),
    )


class SqlEvidence(SqlAuditLog):
    """EvidenceStore: a bundle and its audit event in one transaction, so no bundle is kept
    that the chain does not vouch for, and no event names a bundle that was never kept."""

    async def store_evidence(
        self,
        *,
        node: str,
        cluster: str,
        bundle: Bundle,
        created_at: datetime,
        actor: str,
        reason: str = "",
        incident_id: str | None = None,
        run_id: str | None = None,
        step: str | None = None,
    ) -> StoredEvidence:
        values = {
            "node": node,
            "cluster": cluster,
            "incident_id": incident_id,
            "run_id": run_id,
            "step": step,
            "created_at": created_at,
            "size": bundle.size,
            "sha256": bundle.sha256,
            "parts": [dict(p) for p in bundle.parts],
        }

        def write(conn: Connection) -> StoredEvidence:
            new = conn.execute(
                insert(evidence).values(**values, content=bundle.content).returning(evidence.c.id)
            ).scalar_one()
            event = AuditDraft(
                ts=created_at,
                actor=actor,
                kind=STORED,
                incident_id=incident_id,
                run_id=run_id,
                step=step,
                action=GATHER,
                target=node,
                args={"node": node},
                result={
                    "evidence_id": int(new),
                    "sha256": bundle.sha256,
                    "size": bundle.size,
                    "parts": {str(p["name"]): str(p["status"]) for p in bundle.parts},
                },
                reason=reason,
            )
            self._append(conn, as_stored(event))
            row = conn.execute(select(*_LISTED).where(evidence.c.id == new)).one()
            return _stored(row)

        return await self._run(write, write=True)

    async def list_evidence(
        self,
        *,
        incident_id: str | None = None,
        node: str | None = None,
        run_id: str | None = None,
        limit: int = 200,
    ) -> list[StoredEvidence]:
        """Newest first; none on a database from before the table (opened read-only)."""
        query = select(*_LISTED).order_by(evidence.c.id.desc()).limit(limit)
        if incident_id is not None:
            query = query.where(evidence.c.incident_id == incident_id)
        if run_id is not None:
            query = query.where(evidence.c.run_id == run_id)
        if node is not None:
            query = query.where(evidence.c.node == node)

        def read(conn: Connection) -> list[StoredEvidence]:
            if not inspect(conn).has_table(evidence.name):
                return []
            return [_stored(row) for row in conn.execute(query)]

        return await self._run(read, write=False)

    async def evidence_content(self, evidence_id: int) -> tuple[StoredEvidence, bytes]:
        """The bundle and its bytes; NotFoundError when there is none (or it was pruned)."""

        def read(conn: Connection) -> tuple[StoredEvidence, bytes]:
            row = None
            if inspect(conn).has_table(evidence.name):
                row = conn.execute(
                    select(*_LISTED, evidence.c.content).where(evidence.c.id == evidence_id)
                ).first()
            if row is None:
                raise NotFoundError(f"no evidence bundle {evidence_id}")
            return _stored(row), bytes(row.content)

        return await self._run(read, write=False)

    async def prune_evidence(self, *, before: datetime, audit: AuditDraft) -> list[int]:
        """Delete the bundles created before `before`, and append `audit` (kind
        evidence.pruned) naming each one and its sha256, in one transaction; nothing is
        written when nothing is that old."""

        def prune(conn: Connection) -> list[int]:
            old = conn.execute(
                select(evidence.c.id, evidence.c.sha256, evidence.c.node)
                .where(evidence.c.created_at < before)
                .order_by(evidence.c.id)
            ).all()
            if not old:
                return []
            ids = [int(r.id) for r in old]
            conn.execute(delete(evidence).where(evidence.c.id.in_(ids)))
            result = {
                **audit.result,
                "evidence_ids": ids,
                "sha256": {str(r.id): str(r.sha256) for r in old},
                "before": before.isoformat(),
            }
            self._append(conn, as_stored(replace(audit, result=result)))
            return ids

        return await self._run(prune, write=True)

    async def verify_evidence(self) -> list[ChainProblem]:
        """Each kept bundle against the audit trail, in one snapshot: its content still
        hashes to the sha256 its evidence.stored event recorded, and every bundle an event
        recorded is still kept or was pruned on the record."""
        problems, _checked = await self.check_evidence()
        return problems

    async def check_evidence(self) -> tuple[list[ChainProblem], int]:
        """verify_evidence(), and how many kept bundles it checked."""
        return await self._run(_verify, write=False, snapshot=True)


def _verify(conn: Connection) -> tuple[list[ChainProblem], int]:
    recorded: dict[int, tuple[int, str]] = {}  # evidence id → (event seq, sha256)
    pruned: set[int] = set()
    query = (
        select(audit.c.seq, audit.c.kind, audit.c.result)
        .where(audit.c.kind.in_([STORED, PRUNED]))
        .order_by(audit.c.seq)
    )
    for seq, kind, result in conn.execute(query):
        result = result if isinstance(result, dict) else {}
        if kind == STORED and isinstance(result.get("evidence_id"), int):
            recorded[result["evidence_id"]] = (int(seq), str(result.get("sha256", "")))
        elif kind == PRUNED:
            pruned.update(i for i in result.get("evidence_ids") or () if isinstance(i, int))
    problems: list[ChainProblem] = []
    kept: set[int] = set()
    if inspect(conn).has_table(evidence.name):
        rows = conn.execution_options(stream_results=True).execute(
            select(evidence.c.id, evidence.c.sha256, evidence.c.content).order_by(evidence.c.id)
        )
        for row in rows:  # one bundle in memory at a time
            kept.add(int(row.id))
            actual = hashlib.sha256(bytes(row.content)).hexdigest()
            said = recorded.get(int(row.id))
            if said is None:
                problems.append(
                    ChainProblem(None, f"evidence {row.id}: no evidence.stored event records it")
                )
            elif actual != said[1]:
                problems.append(
                    ChainProblem(
                        None,
                        f"evidence {row.id}: content hashes to {actual[:16]}…, not the "
                        f"{said[1][:16]}… audit event seq {said[0]} recorded (tampered)",
                    )
                )
            elif str(row.sha256) != actual:
                problems.append(
                    ChainProblem(None, f"evidence {row.id}: its sha256 column was changed")
                )
    for missing in sorted(set(recorded) - kept - pruned):
        problems.append(
            ChainProblem(
                None,
                f"evidence {missing} (audit event seq {recorded[missing][0]}) was deleted "
                "without an evidence.pruned event",
            )
        )
    return problems, len(kept)
