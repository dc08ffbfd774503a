"""The engine's clocks; defined in gpubot.clock so adapters wait on the same ones."""

from __future__ import annotations

from gpubot.clock import FakeClock, SystemClock

__all__ = ["FakeClock", "SystemClock"]
