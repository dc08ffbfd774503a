"""Evidence bundles on a SQLite file and real PostgreSQL: kept with the sha256 in their audit
event, read back byte for byte, pruned on the record, and a tampered bundle found by verify."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from gpubot.domain.control.audit import AuditDraft
from gpubot.domain.gpus.evidence import EvidencePart, build_bundle
from gpubot.errors import NotFoundError

if TYPE_CHECKING:
    from gpubot.backends.store import SqlStore
    from tests.integration.conftest import Database

T0 = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
NODE = "gpu-node-07"


def bundle(text: bytes = b"NVRM: Xid (PCI:0000:18:00): 79\n"):  # type: ignore[no-untyped-def]
    parts = [
        EvidencePart("kernel-nvrm.log", "ok", text, "journalctl -k -b"),
        EvidencePart("nvidia-bug-report.log.gz", "missing", b"", "not installed"),
        EvidencePart("nvidia-smi-q.xml", "timed_out", b"<nvidia_smi_log>", "stopped at 60s"),
    ]
    return build_bundle(parts, node=NODE, gathered_at=T0, extra={"cluster": "sim"})


async def keep(store: SqlStore, at: datetime, *, incident: str = "inc-0000000001") -> int:
    stored = await store.store_evidence(
        node=NODE,
        cluster="sim",
        bundle=bundle(at.isoformat().encode()),
        created_at=at,
        incident_id=incident,
        run_id="run-0000000001",
        step="evidence",
        actor="system",
    )
    return stored.id


async def test_a_bundle_round_trips_with_its_sha256_in_the_audit_event(database: Database) -> None:
    store = database.open()
    made = bundle()
    stored = await store.store_evidence(
        node=NODE,
        cluster="sim",
        bundle=made,
        created_at=T0,
        incident_id="inc-0000000001",
        run_id="run-0000000001",
        step="evidence",
        actor="U1",
        reason="gpubot xid79/evidence",
    )
    assert (stored.size, stored.sha256, stored.created_at) == (made.size, made.sha256, T0)
    assert [p["status"] for p in stored.parts] == ["ok", "missing", "timed_out"]
    meta, content = await store.evidence_content(stored.id)
    assert content == made.content
    assert hashlib.sha256(content).hexdigest() == meta.sha256 == made.sha256
    (event,) = await store.events(kinds=["evidence.stored"])
    assert event.result["sha256"] == made.sha256
    assert event.result["evidence_id"] == stored.id
    assert event.result["parts"] == {
        "kernel-nvrm.log": "ok",
        "nvidia-bug-report.log.gz": "missing",
        "nvidia-smi-q.xml": "timed_out",
    }
    assert (event.actor, event.target, event.step) == ("U1", NODE, "evidence")
    assert await store.verify() == []
    assert await store.verify_evidence() == []
    listed = await store.list_evidence(incident_id="inc-0000000001")
    assert [e.id for e in listed] == [stored.id]
    assert await store.list_evidence(incident_id="inc-0000000002") == []
    with pytest.raises(NotFoundError):
        await store.evidence_content(stored.id + 1)


async def test_tampered_content_is_found(database: Database) -> None:
    store = database.open()
    first, second = await keep(store, T0), await keep(store, T0 + timedelta(minutes=1))
    forged = b"\x1f\x8b forged"
    database.execute(
        "UPDATE evidence SET content = :c, sha256 = :h WHERE id = :i",
        c=forged,
        h=hashlib.sha256(forged).hexdigest(),
        i=first,
    )
    problems = [str(p) for p in await store.verify_evidence()]
    assert len(problems) == 1
    assert f"evidence {first}: content hashes to" in problems[0]
    assert "tampered" in problems[0]
    assert await store.verify() == []  # the chain itself is intact: only the bundle changed
    database.execute("DELETE FROM evidence WHERE id = :i", i=second)
    problems = [str(p) for p in await store.verify_evidence()]
    assert any(f"evidence {second} " in p and "without an evidence.pruned" in p for p in problems)


async def test_pruning_deletes_old_bundles_on_the_record(database: Database) -> None:
    store = database.open()
    old = await keep(store, T0)
    recent = await keep(store, T0 + timedelta(days=20))
    cutoff = T0 + timedelta(days=10)
    draft = AuditDraft(ts=T0 + timedelta(days=30), actor="system", kind="evidence.pruned")
    assert await store.prune_evidence(before=cutoff, audit=draft) == [old]
    assert [e.id for e in await store.list_evidence()] == [recent]
    (event,) = await store.events(kinds=["evidence.pruned"])
    assert event.result["evidence_ids"] == [old]
    assert event.result["before"] == cutoff.isoformat()
    # A pruned bundle is not tampering; nothing that old again writes nothing.
    assert await store.verify_evidence() == []
    assert await store.prune_evidence(before=cutoff, audit=draft) == []
    assert len(await store.events(kinds=["evidence.pruned"])) == 1
    assert await store.verify() == []
