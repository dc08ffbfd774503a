"""Signed break-glass votes in SQL: stored once by nonce, counted once by the server."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, RowMapping, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from gpubot.backends.store.database import SqlDatabase
from gpubot.backends.store.tables import signed_votes
from gpubot.domain.control.signed_votes import SubmittedVote


class SqlSignedVotes(SqlDatabase):
    """SignedVoteStore."""

    async def submit_vote(self, vote: SubmittedVote) -> bool:
        insert = pg_insert if self._postgres else sqlite_insert
        add = (
            insert(signed_votes)
            .values(
                digest=vote.digest,
                nonce=vote.nonce,
                action=vote.action,
                target=vote.target,
                message=vote.message.decode("ascii"),
                signature=vote.signature,
                account=vote.account,
                submitted_at=vote.submitted_at,
                state="pending",
                verdict="",
                signer="",
            )
            .on_conflict_do_nothing(index_elements=[signed_votes.c.digest])
            .returning(signed_votes.c.digest)
        )
        return await self._run(lambda conn: conn.execute(add).first() is not None, write=True)

    async def pending_votes(self) -> list[SubmittedVote]:
        query = (
            select(signed_votes)
            .where(signed_votes.c.state == "pending")
            .order_by(signed_votes.c.submitted_at, signed_votes.c.digest)
        )
        return await self._run(
            lambda conn: [_vote(row) for row in conn.execute(query).mappings()], write=False
        )

    async def claim_vote(self, digest: str) -> bool:
        return await self._set_state(digest, "pending", state="counting")

    async def mark_verified(self, digest: str, *, signer: str) -> bool:
        """Record the verified signer, unless another row with this nonce has one already:
        False then (a replay). Votes are counted by the leader alone, one after another, so
        no two processes check one nonce at the same moment."""
        other = (
            select(signed_votes.c.digest)
            .where(
                signed_votes.c.nonce
                == select(signed_votes.c.nonce)
                .where(signed_votes.c.digest == digest)
                .scalar_subquery(),
                signed_votes.c.signer != "",
                signed_votes.c.digest != digest,
            )
            .exists()
        )
        change = (
            update(signed_votes)
            .where(signed_votes.c.digest == digest, ~other)
            .values(signer=signer)
        )
        return await self._run(lambda conn: conn.execute(change).rowcount == 1, write=True)

    async def settle_vote(self, digest: str, *, accepted: bool, verdict: str, at: datetime) -> None:
        state = "accepted" if accepted else "refused"
        await self._set_state(digest, "counting", state=state, verdict=verdict, settled_at=at)

    async def get_vote(self, digest: str) -> SubmittedVote | None:
        query = select(signed_votes).where(signed_votes.c.digest == digest)

        def read(conn: Connection) -> SubmittedVote | None:
            row = conn.execute(query).mappings().first()
            return None if row is None else _vote(row)

        return await self._run(read, write=False)

    async def _set_state(self, digest: str, expected: str, **values: Any) -> bool:
        change = (
            update(signed_votes)
            .where(signed_votes.c.digest == digest, signed_votes.c.state == expected)
            .values(**values)
        )
        return await self._run(lambda conn: conn.execute(change).rowcount == 1, write=True)


def _vote(row: RowMapping) -> SubmittedVote:
    return SubmittedVote(
        nonce=row["nonce"],
        action=row["action"],
        target=row["target"],
        message=str(row["message"]).encode("ascii", "replace"),
        signature=row["signature"],
        account=row["account"],
        submitted_at=row["submitted_at"],
        state=row["state"],
        verdict=row["verdict"],
        signer=row["signer"],
    )
