"""The record of accepted Slack requests, on SQLite and PostgreSQL: one winner per digest."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.integration.conftest import Database

T0 = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
UNTIL = T0 + timedelta(minutes=6)


async def test_replicas_racing_on_one_digest_accept_it_once(database: Database) -> None:
    """Four replicas (four engines on one database) record the same digest at once, five
    times each: exactly one call wins; a different digest is still new."""
    replicas = [database.open() for _ in range(4)]
    digest = "d" * 64
    results = await asyncio.gather(
        *(r.first_sight(digest, expires_at=UNTIL, now=T0) for r in replicas for _ in range(5))
    )
    assert results.count(True) == 1
    assert await replicas[1].first_sight("e" * 64, expires_at=UNTIL, now=T0)
    for r in replicas:
        await r.close()


async def test_expired_digests_are_pruned_by_the_next_write(database: Database) -> None:
    store = database.open()
    assert await store.first_sight("a" * 64, expires_at=UNTIL, now=T0)
    assert not await store.first_sight("a" * 64, expires_at=UNTIL, now=T0 + timedelta(minutes=5))
    later = UNTIL + timedelta(seconds=1)
    assert await store.first_sight("b" * 64, expires_at=later + timedelta(minutes=6), now=later)
    assert database.scalar("SELECT count(*) FROM gpubot_slack_seen") == 1
    assert database.scalar("SELECT digest FROM gpubot_slack_seen") == "b" * 64
    await store.close()
