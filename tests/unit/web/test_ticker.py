"""serve's ticker on fake time: a look at other replicas' records every second, a full tick
every 15 s, and a failed round logged without stopping the loop."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

import pytest

from gpubot.clock import FakeClock
from gpubot.engine.service import GpubotService
from gpubot.web.server import FOLLOW_SECONDS, TICK_SECONDS, ticker


class _Read:
    def is_leader(self) -> bool:
        return True


class _Service:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.read = _Read()
        self.ticks: list[float] = []
        self.follows: list[float] = []
        self.fail_at: set[float] = set()
        self.background = self  # the service's leader loop: tick and follow

    async def tick(self) -> None:
        self.ticks.append(self.clock.monotonic())

    async def pause(self, clock: FakeClock, seconds: float) -> None:
        await clock.sleep(seconds)  # no word of other processes' writes (SQLite)

    async def follow(self) -> None:
        if self.clock.monotonic() in self.fail_at:
            raise RuntimeError("the store went away")
        self.follows.append(self.clock.monotonic())


async def test_follows_every_second_and_ticks_every_fifteen(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock(auto_advance=False)
    service = _Service(clock)
    service.fail_at = {3.0}
    running = asyncio.ensure_future(ticker(cast(GpubotService, cast(Any, service)), clock))
    try:
        await clock.until_sleeping(1)
        assert (service.ticks, service.follows) == ([], [])  # nothing before time moves
        with caplog.at_level(logging.ERROR):
            await clock.run_for(2 * TICK_SECONDS)
    finally:
        running.cancel()
    assert service.ticks == [TICK_SECONDS, 2 * TICK_SECONDS]
    # Every other second a look at what other replicas recorded, less the one that failed.
    assert service.follows == [float(s) for s in range(1, 31) if s not in (3, 15, 30)]
    assert FOLLOW_SECONDS == 1.0
    assert "periodic tick failed" in caplog.text  # logged; the rounds after it still ran
