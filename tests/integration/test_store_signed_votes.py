"""Signed break-glass votes in the store, on SQLite and PostgreSQL: one row per signed vote,
each claimed by one counter, and one verified row per nonce."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from gpubot.domain.control.signed_votes import SubmittedVote

if TYPE_CHECKING:
    from tests.integration.conftest import Database

T0 = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
VOTE = SubmittedVote(
    nonce="0" * 32,
    action="approve",
    target="apr-1",
    message=b'{"nonce":"00"}',
    signature="-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n",
    account="alice",
    submitted_at=T0,
)


async def test_a_signed_vote_is_stored_once_and_claimed_once(database: Database) -> None:
    replicas = [database.open() for _ in range(4)]
    assert await replicas[0].submit_vote(VOTE)
    assert not await replicas[1].submit_vote(VOTE)  # the same signed vote again
    [pending] = await replicas[2].pending_votes()
    assert (pending.digest, pending.state, pending.message) == (
        VOTE.digest,
        "pending",
        VOTE.message,
    )
    claims = await asyncio.gather(*(r.claim_vote(VOTE.digest) for r in replicas for _ in range(3)))
    assert claims.count(True) == 1
    assert await replicas[0].pending_votes() == []
    await replicas[3].settle_vote(VOTE.digest, accepted=True, verdict="Approved by <@U1>.", at=T0)
    stored = await replicas[1].get_vote(VOTE.digest)
    assert stored is not None
    assert (stored.state, stored.verdict) == ("accepted", "Approved by <@U1>.")
    assert await replicas[1].get_vote("f" * 64) is None
    for r in replicas:
        await r.close()


async def test_one_nonce_is_verified_for_one_row_only(database: Database) -> None:
    """Rows with one nonce and different signatures (a forgery, a re-signing) are stored
    apart; the first to be verified keeps the nonce, and a forgery never verified does not
    take it from the real vote."""
    store = database.open()
    forged = replace(VOTE, signature=VOTE.signature.replace("AAAA", "BBBB"))
    resigned = replace(VOTE, signature=VOTE.signature.replace("AAAA", "CCCC"))
    for vote in (forged, VOTE, resigned):
        assert await store.submit_vote(vote)
    assert len({forged.digest, VOTE.digest, resigned.digest}) == 3
    assert await store.mark_verified(VOTE.digest, signer="SHA256:x")
    assert await store.mark_verified(VOTE.digest, signer="SHA256:x")  # the same row again
    assert not await store.mark_verified(resigned.digest, signer="SHA256:x")
    other_nonce = replace(VOTE, nonce="1" * 32, message=b'{"nonce":"11"}')
    assert await store.submit_vote(other_nonce)
    assert await store.mark_verified(other_nonce.digest, signer="SHA256:y")
    stored = await store.get_vote(VOTE.digest)
    assert stored is not None
    assert stored.signer == "SHA256:x"
    await store.close()
