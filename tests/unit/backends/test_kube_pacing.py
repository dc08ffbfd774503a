"""TokenBucket: a burst goes out at once, then qps a second, in order; Retry-After holds all."""

from __future__ import annotations

import asyncio

import pytest

from gpubot.backends.kube.pacing import TokenBucket


class Time:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))


async def test_burst_then_paced_in_order() -> None:
    t = Time()
    bucket = TokenBucket(qps=10, burst=3, monotonic=t.monotonic, sleep=t.sleep)
    await asyncio.gather(*(bucket.acquire() for _ in range(6)))
    assert t.slept == [0.1, 0.2, 0.3]  # the burst of 3 waited for nothing
    assert bucket.taken == 6
    t.now = 10.0  # tokens come back, up to the burst
    t.slept.clear()
    for _ in range(3):
        await bucket.acquire()
    assert t.slept == []


async def test_retry_after_holds_every_sender() -> None:
    t = Time()
    bucket = TokenBucket(qps=10, burst=5, monotonic=t.monotonic, sleep=t.sleep)
    bucket.hold_off(2.0)
    await bucket.acquire()
    assert t.slept == [2.1]


def test_a_bucket_that_never_lets_anything_through_is_refused() -> None:
    with pytest.raises(ValueError, match="qps must be > 0"):
        TokenBucket(qps=0, burst=1)
