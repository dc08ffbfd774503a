"""Evidence older than evidence.keep_days is pruned by the leader's tick, at most hourly, on
the record (evidence.pruned), on a fake clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gpubot.backends.store import SqlStore, open_store
from gpubot.domain.gpus.evidence import EvidencePart, build_bundle
from gpubot.engine.clock import FakeClock
from gpubot.engine.evidence_pruning import EvidencePruner

T0 = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlStore]:
    opened = open_store(f"sqlite:///{tmp_path / 'gpubot.db'}")
    yield opened
    opened.dispose()


async def keep(store: SqlStore, at: datetime) -> int:
    parts = [EvidencePart("kernel-nvrm.log", "ok", at.isoformat().encode())]
    bundle = build_bundle(parts, node="gpu-node-01", gathered_at=at, extra={})
    stored = await store.store_evidence(
        node="gpu-node-01", cluster="sim", bundle=bundle, created_at=at, actor="system"
    )
    return stored.id


async def test_old_bundles_go_at_the_first_look_past_their_age(store: SqlStore) -> None:
    clock = FakeClock(T0)
    pruner = EvidencePruner(store, clock, keep_days=30)
    old = await keep(store, T0)
    clock.advance(timedelta(days=10))
    young = await keep(store, clock.now())
    assert await pruner.maybe_prune() == []  # nothing 30 days old yet: nothing recorded
    assert await store.events(kinds=["evidence.pruned"]) == []

    clock.advance(timedelta(days=21))  # T0 + 31 days
    assert await pruner.maybe_prune() == [old]
    [event] = await store.events(kinds=["evidence.pruned"])
    assert (event.actor, event.ts, event.result["evidence_ids"]) == ("system", clock.now(), [old])
    assert event.args == {"keep_days": 30}
    assert [e.id for e in await store.list_evidence()] == [young]
    assert await store.verify_evidence() == []
    assert await store.verify() == []

    clock.advance(timedelta(minutes=30))
    assert await pruner.maybe_prune() == []  # at most hourly: not even looked
    clock.advance(timedelta(days=10))  # young is now 31 days old
    assert await pruner.maybe_prune() == [young]


async def test_keep_days_zero_keeps_every_bundle(store: SqlStore) -> None:
    clock = FakeClock(T0)
    kept = await keep(store, T0)
    clock.advance(timedelta(days=3650))
    assert await EvidencePruner(store, clock, keep_days=0).maybe_prune() == []
    assert [e.id for e in await store.list_evidence()] == [kept]
