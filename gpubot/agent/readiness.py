"""The agent's readiness: NVML answers a cheap query in time; the verdict is kept a few seconds."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from gpubot.agent.driver import GpuDriverError
from gpubot.clock import SystemClock
from gpubot.ports import Clock

log = logging.getLogger(__name__)
# Blocking, like every driver call: the number of GPUs NVML sees, or GpuDriverError.
CountGpus = Callable[[], int]


@dataclass(frozen=True)
class Verdict:
    ready: bool
    reason: str  # one line: what answered, or why not


class Readiness:
    """Asks the driver at most once per `ttl_s`, waiting at most `timeout_s` for it.

    Each change of the verdict is one log line (the first one too); a probe is not.
    A call NVML never returns from stays the only one: later probes wait on that same call
    (in its thread) instead of starting another, so a hung driver costs one thread, not one
    per probe.
    """

    def __init__(
        self,
        count_gpus: CountGpus,
        *,
        clock: Clock | None = None,
        ttl_s: float = 5.0,
        timeout_s: float = 2.0,
    ) -> None:
        self._count_gpus = count_gpus
        self._clock: Clock = clock or SystemClock()
        self._ttl_s = ttl_s
        self._timeout_s = timeout_s
        self._last: tuple[float, Verdict] | None = None
        self._pending: asyncio.Future[int] | None = None

    async def verdict(self) -> Verdict:
        now = self._clock.monotonic()
        if self._last is not None and now - self._last[0] < self._ttl_s:
            return self._last[1]
        verdict = await self._ask()
        before = self._last[1] if self._last is not None else None
        self._last = (self._clock.monotonic(), verdict)
        if before is None or before.ready != verdict.ready:
            log.log(
                logging.INFO if verdict.ready else logging.ERROR,
                "%s: %s",
                "ready" if verdict.ready else "not ready",
                verdict.reason,
                extra={
                    "event": "agent.ready" if verdict.ready else "agent.not_ready",
                    "reason": verdict.reason,
                },
            )
        return verdict

    async def _ask(self) -> Verdict:
        if self._pending is None or self._pending.done():
            self._pending = asyncio.ensure_future(asyncio.to_thread(self._count_gpus))
        try:
            count = await self._clock.wait_for(asyncio.shield(self._pending), self._timeout_s)
        except TimeoutError:
            return Verdict(False, f"NVML did not answer within {self._timeout_s:g} s")
        except GpuDriverError as exc:
            return Verdict(False, f"NVML: {_line(str(exc))} ({exc.kind})")
        except Exception as exc:  # a probe answers 503 with a reason, never a traceback
            return Verdict(False, f"NVML check failed: {type(exc).__name__}")
        if count < 1:
            return Verdict(False, "NVML answers but sees no GPU (NVIDIA_VISIBLE_DEVICES?)")
        return Verdict(True, f"NVML answers: {count} GPU(s)")


def _line(text: str) -> str:
    return text.splitlines()[0][:300] if text else "-"
