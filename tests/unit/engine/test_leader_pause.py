"""The leader's pause between looks at the store: a whole second where the store cannot tell
of other processes' writes (SQLite); cut short, on fake time, by word of one (PostgreSQL's
notifications), then a short gap so a storm of writes costs one look per gap."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

from gpubot.clock import FakeClock
from gpubot.engine.leader_loop import NEWS_GAP_SECONDS, LeaderLoop


class _Store:
    def __init__(self, *, can_tell: bool) -> None:
        self.can_tell = can_tell
        self.wake: Callable[[], None] | None = None

    def watch_writes(self, wake: Callable[[], None]) -> bool:
        if self.can_tell:
            self.wake = wake
        return self.can_tell


async def _gap_begun(clock: FakeClock) -> None:
    """Until the pause sleeps its gap (the wake's callback and the pause's wake-up ran)."""
    for _ in range(1000):
        if clock.slept and clock.slept[-1] == NEWS_GAP_SECONDS and clock.sleeping:
            return
        await asyncio.sleep(0)
    raise AssertionError("the pause never began its gap")


def _loop(store: _Store) -> LeaderLoop:
    service = SimpleNamespace(e=SimpleNamespace(store=store))
    return LeaderLoop(cast(Any, service))


async def test_a_store_that_cannot_tell_gets_the_whole_pause() -> None:
    clock = FakeClock(auto_advance=False)
    loop = _loop(_Store(can_tell=False))
    assert loop.watch_store() is False
    pause = asyncio.ensure_future(loop.pause(clock, 1.0))
    await clock.until_sleeping(1)
    await clock.run_for(0.99)
    assert not pause.done()
    await clock.run_for(0.01)
    await pause
    assert clock.monotonic() == 1.0


async def test_word_of_another_write_ends_the_pause_after_the_gap() -> None:
    clock = FakeClock(auto_advance=False)
    store = _Store(can_tell=True)
    loop = _loop(store)
    assert loop.watch_store() is True
    pause = asyncio.ensure_future(loop.pause(clock, 1.0))
    await clock.until_sleeping(1)
    await clock.run_for(0.25)
    assert store.wake is not None
    store.wake()  # as the store's watch thread calls it
    await _gap_begun(clock)
    await clock.run_for(NEWS_GAP_SECONDS)
    await asyncio.wait_for(pause, timeout=30)
    assert clock.monotonic() == 0.25 + NEWS_GAP_SECONDS  # long before the second was up


async def test_writes_during_a_look_end_the_next_pause_at_once() -> None:
    """Word that came while the leader was looking is not lost: the next pause is short."""
    clock = FakeClock(auto_advance=False)
    store = _Store(can_tell=True)
    loop = _loop(store)
    loop.watch_store()
    assert store.wake is not None
    store.wake()
    await asyncio.sleep(0)  # call_soon_threadsafe's callback runs
    pause = asyncio.ensure_future(loop.pause(clock, 1.0))
    await _gap_begun(clock)
    await clock.run_for(NEWS_GAP_SECONDS)
    await asyncio.wait_for(pause, timeout=30)
    assert clock.monotonic() == NEWS_GAP_SECONDS
