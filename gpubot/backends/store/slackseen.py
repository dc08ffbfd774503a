"""Signed Slack requests already accepted, shared by every replica through the store."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, delete
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from gpubot.backends.store.database import SqlDatabase
from gpubot.backends.store.tables import slack_seen


class SqlSlackSeen(SqlDatabase):
    """SeenRequests (gpubot.slack.verify): the first replica to record a digest wins."""

    async def first_sight(self, digest: str, *, expires_at: datetime, now: datetime) -> bool:
        """Record `digest` until `expires_at`; True when no replica had recorded it yet.

        One transaction: expired rows go first (an index range delete, so cheap), then an
        insert that does nothing on a conflict decides; two replicas racing on one digest
        both reach the primary key, and exactly one inserts.
        """
        insert = pg_insert if self._postgres else sqlite_insert
        add = (
            insert(slack_seen)
            .values(digest=digest, expires_at=expires_at)
            .on_conflict_do_nothing(index_elements=[slack_seen.c.digest])
            # The row comes back only when it was inserted (psycopg's rowcount says -1).
            .returning(slack_seen.c.digest)
        )
        prune = delete(slack_seen).where(slack_seen.c.expires_at < now)

        def write(conn: Connection) -> bool:
            conn.execute(prune)
            return conn.execute(add).first() is not None

        return await self._run(write, write=True)
