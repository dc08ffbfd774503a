"""Node Events posted off the step's path, as client-go's event recorder posts them.

A Node Event says on the node what gpubot did (`kubectl describe node` shows it); the audit
trail is the record. A step that cordons a node should not wait for its Event, and in a
storm of cordons the Events should not take the request budget from the cordons: they
queue here and a few workers post them, oldest first, each carrying the time it was made.
While the adapter's other requests keep coming (a storm, a drain), the Events wait for a
lull of `quiet_s` seconds, but none waits longer than `yield_s` for its turn.
What the queue cannot hold (the API server has been away for long) is dropped and counted;
a failed post is logged and the next one goes on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

WORKERS = 2  # Events in flight at once: the cordons get the rest of the request budget
LIMIT = 10_000  # Events waiting at most; past it a new one is dropped
QUIET_S = 0.25  # the lull in the other requests that lets Events go
YIELD_S = 10.0  # the longest an Event waits for that lull


class EventQueue:
    """Bodies handed to `post` by `WORKERS` tasks, in the order they were queued."""

    def __init__(
        self,
        post: Callable[[dict[str, Any]], Awaitable[None]],
        *,
        workers: int = WORKERS,
        limit: int = LIMIT,
        quiet_s: float = QUIET_S,
        yield_s: float = YIELD_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._post = post
        self._workers = workers
        self._limit = limit
        self._quiet_s = quiet_s
        self._yield_s = yield_s
        self._clock = clock
        self._waiting: deque[tuple[dict[str, Any], str, float]] = deque()
        self._running: set[asyncio.Task[None]] = set()
        self._in_flight = 0
        self._last_other = -float("inf")  # when the last of the other requests started
        self._flushing = 0
        self._wake: asyncio.Future[None] | None = None
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
        self._waiting.append((body, what, self._clock()))
        self._start_workers()

    def note_other(self) -> None:
        """Another request of the adapter is starting: the Events wait for a lull."""
        self._last_other = self._clock()

    def nudge(self) -> None:
        """Workers waiting for their turn look again now (the clock moved, a flush began)."""
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

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
            await self._turn()
            if not self._waiting:
                return
            body, what, _made = self._waiting.popleft()
            self._in_flight += 1
            try:
                await self._post(body)
                self.posted += 1
            except Exception as exc:  # best effort: the next Event still goes
                self.failed += 1
                log.warning("could not post the %s event: %s", what, exc)
            finally:
                self._in_flight -= 1

    async def _turn(self) -> None:
        """Until the other requests have paused for `quiet_s`, the oldest waiting Event has
        waited `yield_s`, or a flush asks for everything now."""
        loop = asyncio.get_running_loop()
        while self._waiting and not self._flushing:
            now = self._clock()
            go_at = min(self._last_other + self._quiet_s, self._waiting[0][2] + self._yield_s)
            if now >= go_at:
                return
            if self._wake is None or self._wake.done() or self._wake.get_loop() is not loop:
                self._wake = loop.create_future()
            await asyncio.wait([self._wake], timeout=go_at - now)

    async def flush(self, *, timeout_s: float) -> int:
        """Post every queued Event now, without waiting for a lull, and wait until they are
        posted, at most `timeout_s`; how many were left."""
        self._flushing += 1
        try:
            self.nudge()
            self._start_workers()
            if self._running:
                await asyncio.wait(list(self._running), timeout=timeout_s)
        finally:
            self._flushing -= 1
        return len(self)
