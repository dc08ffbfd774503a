"""Chat message references (channel, ts) by key, so threads survive a restart."""

from __future__ import annotations

from sqlalchemy import Connection, insert, select, update

from gpubot.backends.store.database import SqlDatabase
from gpubot.backends.store.tables import chat_refs


class SqlChatRefs(SqlDatabase):
    """ChatRefs: where a Slack thread or approval message lives."""

    async def get_chat_ref(self, key: str) -> tuple[str, str] | None:
        query = select(chat_refs.c.channel, chat_refs.c.ts).where(chat_refs.c.key == key)

        def read(conn: Connection) -> tuple[str, str] | None:
            row = conn.execute(query).first()
            return None if row is None else (str(row[0]), str(row[1]))

        return await self._run(read, write=False)

    async def put_chat_ref(self, key: str, *, channel: str, ts: str) -> None:
        def write(conn: Connection) -> None:
            done = conn.execute(
                update(chat_refs).where(chat_refs.c.key == key).values(channel=channel, ts=ts)
            )
            if done.rowcount == 0:
                conn.execute(insert(chat_refs).values(key=key, channel=channel, ts=ts))

        await self._run(write, write=True)
