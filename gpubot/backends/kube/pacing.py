"""Pacing: a token bucket (QPS and burst, as client-go's) for requests to one API server.

Every request the adapter sends takes a token first: at most `burst` go out back to back, and
after that `qps` per second. A 429 from API priority and fairness (the server shedding load,
not a PodDisruptionBudget) is retried after its Retry-After, through the same bucket, a few
times; so a storm of steps never turns into a storm of requests, nor of unpaced retries.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

Sleep = Callable[[float], Awaitable[None]]


class TokenBucket:
    """`qps` tokens a second, up to `burst` saved; `acquire` waits for one (FIFO)."""

    def __init__(
        self,
        *,
        qps: float,
        burst: int,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"qps must be > 0 and burst >= 1 (got {qps}, {burst})")
        self.qps = qps
        self.burst = burst
        self._mono = monotonic
        self._sleep = sleep
        self._tokens = float(burst)
        self._last = monotonic()
        self.waited = 0.0  # seconds callers spent waiting for a token, in total
        self.taken = 0

    def _refill(self) -> None:
        now = self._mono()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now

    async def acquire(self) -> None:
        """Take one token, waiting until it is there. Tokens are reserved at once (the count
        may go below zero), so waiters leave in the order they came, each 1/qps apart."""
        self._refill()
        self._tokens -= 1.0
        self.taken += 1
        if self._tokens < 0:
            wait = -self._tokens / self.qps
            self.waited += wait
            await self._sleep(wait)

    def hold_off(self, seconds: float) -> None:
        """The server said Retry-After: nobody sends for `seconds` (tokens owed, not lost)."""
        self._refill()
        self._tokens = min(self._tokens, -seconds * self.qps)
