"""Node Events posted off the step's path, as client-go's event recorder posts them.

A Node Event says on the node what gpubot did (`kubectl describe node` shows it); the audit
trail is the record. A step that cordons a node should not wait for its Event, and in a
storm of cordons the Events should not take the API server's time from the cordons: they
queue here and a few workers post them, oldest first, each carrying the time it was made.
What the queue cannot hold (the API server has been away for long) is dropped and counted;
a failed post is logged and the next one goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

WORKERS = 2  # Events in flight at once: the cordons get the rest of the request budget
LIMIT = 10_000  # Events waiting at most; past it a new one is dropped


class EventQueue:
    """Bodies handed to `post` by `WORKERS` tasks, in the order they were queued."""

    def __init__(
        self,
        post: Callable[[dict[str, Any]], Awaitable[None]],
        *,
        workers: int = WORKERS,
        limit: int = LIMIT,
    ) -> None:
        self._post = post
        self._workers = workers
        self._limit = limit
        self._waiting: deque[tuple[dict[str, Any], str]] = deque()
        self._running: set[asyncio.Task[None]] = set()
        self._in_flight = 0
        self.posted = 0
        self.failed = 0
        self.dropped = 0

    def __len__(self) -> int:
        """Events not posted yet (waiting or in flight)."""
        return len(self._waiting) + self._in_flight

    def put(self, body: dict[str, Any], *, what: str) -> None:
        """Queue an Event (`what` names it in a log line); returns at once."""
        if len(self._waiting) >= self._limit:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning(
                    "node events: %d waiting; dropped %s (%d dropped so far)",
                    len(self._waiting),
                    what,
                    self.dropped,
                    extra={"event": "node_event.dropped"},
                )
            return
        self._waiting.append((body, what))
        self._start_workers()

    def _start_workers(self) -> None:
        loop = asyncio.get_running_loop()
        # Workers of a loop that has ended (a CLI command's) are gone with it.
        self._running = {t for t in self._running if t.get_loop() is loop and not t.done()}
        if not self._running:
            self._in_flight = 0
        while len(self._running) < min(self._workers, len(self._waiting)):
            task = loop.create_task(self._work())
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _work(self) -> None:
        while self._waiting:
            body, what = self._waiting.popleft()
            self._in_flight += 1
            try:
                await self._post(body)
                self.posted += 1
            except Exception as exc:  # best effort: the next Event still goes
                self.failed += 1
                log.warning("could not post the %s event: %s", what, exc)
            finally:
                self._in_flight -= 1

    async def flush(self, *, timeout_s: float) -> int:
        """Wait until every queued Event is posted, at most `timeout_s`; how many were left."""
        self._start_workers()
        if self._running:
            await asyncio.wait(list(self._running), timeout=timeout_s)
        return len(self)
