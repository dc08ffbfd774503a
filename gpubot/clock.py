"""Clocks: the real one, and a fake one that tests move by hand.

Everything that waits (the engine, the Slack outbox, the Lease, the agent client, the XID
watcher, the report scheduler) takes one of these, so a test runs all of it on fake time.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TypeVar

T = TypeVar("T")

# How long FakeClock.run_for waits, in real time, for woken tasks to sleep again or finish:
# long enough for a busy machine; a task still running after it is a bug in the test.
SETTLE_LIMIT_S = 60.0


class SystemClock:
    """Wall-clock time, the event loop's sleep and asyncio's timeouts."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def wait_for(self, aw: Awaitable[T], seconds: float) -> T:
        return await asyncio.wait_for(aw, seconds)


@dataclass(order=True)
class _Sleeper:
    deadline: float
    seq: int
    wake: asyncio.Future[None] = field(compare=False)
    owner: asyncio.Task[object] | None = field(compare=False)


class FakeClock:
    """Time moves only when told.

    With `auto_advance` (the default) `sleep()` moves time forward by its argument at once,
    so code that sleeps between steps runs without waiting. With `auto_advance=False` a
    `sleep()` returns only when the test moves time past its end (`advance()` or
    `run_for()`), which is what a loop that sleeps forever (a renewal, a poll) needs.
    `wait_for()` times out only when the test moves time past its limit, in both modes.
    """

    def __init__(self, start: datetime | None = None, *, auto_advance: bool = True) -> None:
        self._now = start or datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
        self._mono = 0.0
        self.auto_advance = auto_advance
        self.slept: list[float] = []
        self._sleepers: list[_Sleeper] = []
        self._seq = itertools.count()

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        """Seconds since the clock was made, moved only by the test (or an auto sleep)."""
        return self._mono

    def advance(self, delta: timedelta | float) -> None:
        """Move time forward and wake every sleep and timeout that ends by then."""
        seconds = delta.total_seconds() if isinstance(delta, timedelta) else float(delta)
        self._now += timedelta(seconds=seconds)
        self._mono += seconds
        while self._sleepers and self._sleepers[0].deadline <= self._mono:
            sleeper = heapq.heappop(self._sleepers)
            if not sleeper.wake.done():
                sleeper.wake.set_result(None)

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        if self.auto_advance:
            self.advance(max(0.0, seconds))
            await asyncio.sleep(0)
            return
        await self._timer(seconds)

    async def wait_for(self, aw: Awaitable[T], seconds: float) -> T:
        """`aw`'s result, or TimeoutError once the test moves time `seconds` on."""
        work = asyncio.ensure_future(aw)
        timer = asyncio.ensure_future(self._timer(seconds, owner=asyncio.current_task()))
        try:
            await asyncio.wait({work, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            if not work.done():
                work.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await work
        if work.cancelled():
            raise TimeoutError(f"no answer within {seconds:g} s (fake time)")
        return work.result()

    @property
    def sleeping(self) -> int:
        """How many sleeps and timeouts are waiting for time to move."""
        return sum(1 for s in self._sleepers if not s.wake.done())

    async def until_sleeping(self, count: int = 1) -> None:
        """Return once `count` sleeps or timeouts wait for time to move (no time passes)."""
        await self._settle(lambda: self.sleeping >= count, f"{count} sleeper(s)")

    async def run_for(self, delta: timedelta | float) -> None:
        """Move time forward in steps, one per sleep that ends on the way; after each step
        wait (in real time) until the tasks it woke sleep again or finish, so a loop that
        sleeps 5 s runs four rounds in `run_for(20)` however busy the machine is."""
        seconds = delta.total_seconds() if isinstance(delta, timedelta) else float(delta)
        end = self._mono + seconds
        while True:
            due = [s for s in self._sleepers if not s.wake.done()]
            step = min((s.deadline for s in due), default=end)
            if step > end:
                step = end
            woken = {s.owner for s in due if s.deadline <= step and s.owner is not None}
            self.advance(step - self._mono)
            await self._settle(self._all_idle(woken), "woken tasks")
            if self._mono >= end and not any(
                s.deadline <= end for s in self._sleepers if not s.wake.done()
            ):
                return

    def _all_idle(self, tasks: set[asyncio.Task[object]]) -> Callable[[], bool]:
        return lambda: all(self._idle(t) for t in tasks)

    def _idle(self, task: asyncio.Task[object]) -> bool:
        return task.done() or any(s.owner is task and not s.wake.done() for s in self._sleepers)

    async def _settle(self, check: Callable[[], bool], what: str) -> None:
        for _ in range(1000):  # most code reaches its next sleep within a few loop turns
            if check():
                return
            await asyncio.sleep(0)
        limit = time.monotonic() + SETTLE_LIMIT_S
        while not check():
            if time.monotonic() > limit:
                raise AssertionError(f"FakeClock: waited {SETTLE_LIMIT_S:g} s for {what}")
            await asyncio.sleep(0.001)

    async def _timer(self, seconds: float, *, owner: asyncio.Task[object] | None = None) -> None:
        loop = asyncio.get_running_loop()
        owner = owner or asyncio.current_task()
        sleeper = _Sleeper(
            self._mono + max(0.0, seconds), next(self._seq), loop.create_future(), owner
        )
        if sleeper.deadline <= self._mono:
            await asyncio.sleep(0)
            return
        heapq.heappush(self._sleepers, sleeper)
        try:
            await sleeper.wake
        finally:
            if not sleeper.wake.done():
                sleeper.wake.cancel()
                self._sleepers.remove(sleeper)
                heapq.heapify(self._sleepers)
