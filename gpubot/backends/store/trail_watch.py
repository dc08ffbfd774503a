"""Word from PostgreSQL that another process wrote to the store, so the replica that leads a
run acts on it at once rather than at its next look.

Every write transaction on PostgreSQL ends with `pg_notify(channel, token)` (delivered at
its commit, coalesced within it): the channel is named for the schema, so bots that share a
database in separate schemas do not hear each other, and the token is the writing process's
own, so a process does not wake itself. A watcher holds one connection of its own, outside
the pool, on which it LISTENs in a thread and calls `wake` for each notification from
another process. A lost connection is opened again after a backoff; while it is down the
leader still looks every second, as it does on SQLite.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.sql import text

log = logging.getLogger(__name__)

NOTIFY = text("SELECT pg_notify(:channel, :token)")
CURRENT_SCHEMA = "SELECT current_schema()"
POLL_SECONDS = 1.0  # how often the thread looks at its stop flag between notifications
BACKOFF_SECONDS = (0.5, 1.0, 2.0, 5.0)


def channel_for(schema: str | None) -> str:
    """The channel of the store in `schema` (a plain identifier: the schema's names are
    checked when the engine is made)."""
    return f"gpubot_store_{schema or 'public'}"[:63]


class TrailWatch:
    """A thread that LISTENs on the store's channel and calls `wake` for other writers."""

    def __init__(self, engine: Engine, *, token: str, wake: Callable[[], None]) -> None:
        self._engine = engine
        self._token = token
        self._wake = wake
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpubot-store-watch", daemon=True)
        self.listening = threading.Event()  # set while a LISTEN is in place
        self.listens = 0  # how many connections have listened so far (reconnects count)
        self.heard: deque[str] = deque(maxlen=64)  # the last writers' tokens, own included

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=POLL_SECONDS + 2.0)

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                self._listen()
                failures = 0
            except Exception as exc:  # the database went away: open again after a pause
                self.listening.clear()
                delay = BACKOFF_SECONDS[min(failures, len(BACKOFF_SECONDS) - 1)]
                failures += 1
                log.warning(
                    "store: lost the notification connection (%s); the leader looks every "
                    "second until it is back (retrying in %.1fs)",
                    str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                    delay,
                    extra={"event": "store.watch_lost"},
                )
                self._stop.wait(delay)

    def _listen(self) -> None:
        raw = self._engine.raw_connection()
        conn: Any = raw.driver_connection
        raw.detach()  # held for as long as the watch runs: not the pool's to hand out
        try:
            conn.rollback()
            conn.autocommit = True
            schema = conn.execute(CURRENT_SCHEMA).fetchone()[0]
            conn.execute(f'LISTEN "{channel_for(schema)}"')
            self.listens += 1
            self.listening.set()
            while not self._stop.is_set():
                for note in conn.notifies(timeout=POLL_SECONDS):
                    self.heard.append(note.payload)
                    if note.payload != self._token:
                        self._wake()
        finally:
            self.listening.clear()
            raw.close()
