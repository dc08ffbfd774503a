"""FakeClock: a sleep ends only when the test moves time; timeouts fire only on fake time."""

from __future__ import annotations

import asyncio

import pytest

from gpubot.clock import FakeClock, SystemClock


async def test_a_sleep_returns_when_the_test_moves_time_past_its_end() -> None:
    clock = FakeClock(auto_advance=False)
    sleeper = asyncio.ensure_future(clock.sleep(5))
    await clock.until_sleeping(1)
    clock.advance(4.9)
    await asyncio.sleep(0)
    assert not sleeper.done()  # fake time short of its end: nothing can wake it
    clock.advance(0.1)
    await sleeper
    assert clock.monotonic() == 5.0


async def test_auto_advance_moves_time_by_each_sleep_at_once() -> None:
    clock = FakeClock()
    start = clock.now()
    await clock.sleep(30)
    assert (clock.now() - start).total_seconds() == 30
    assert clock.slept == [30]


async def test_run_for_runs_each_round_of_a_loop_that_sleeps() -> None:
    clock = FakeClock(auto_advance=False)
    rounds: list[float] = []

    async def loop() -> None:
        while True:
            await clock.sleep(5)
            await asyncio.to_thread(lambda: None)  # a round that leaves the loop's thread
            rounds.append(clock.monotonic())

    task = asyncio.ensure_future(loop())
    await clock.until_sleeping(1)
    await clock.run_for(20)
    assert rounds == [5, 10, 15, 20]
    task.cancel()


async def test_wait_for_times_out_only_when_fake_time_passes_the_limit() -> None:
    clock = FakeClock()  # auto_advance: sleeps move time, but a timeout still waits for it
    never: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    waiting = asyncio.ensure_future(clock.wait_for(never, 10))
    await clock.until_sleeping(1)
    clock.advance(9)
    await asyncio.sleep(0)
    assert not waiting.done()
    await clock.run_for(1)
    with pytest.raises(TimeoutError):
        await waiting
    assert never.cancelled()


async def test_wait_for_returns_the_answer_that_comes_in_time() -> None:
    clock = FakeClock(auto_advance=False)

    async def answer() -> int:
        await asyncio.sleep(0)
        return 7

    assert await clock.wait_for(answer(), 10) == 7
    assert clock.sleeping == 0  # the timer is gone with the answer
    assert await SystemClock().wait_for(answer(), 10) == 7
