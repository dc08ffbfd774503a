"""Thermal steps: read a GPU's heat and throttling, and wait (durably) for it to cool."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import Field, field_validator

from gpubot.actions.base import (
    ActionContext,
    ActionSpec,
    CheckResult,
    Output,
    PlanNote,
    nothing_to_check,
)
from gpubot.actions.gpu import GpuParams, _gpu
from gpubot.domain.runbooks.action_names import Action
from gpubot.domain.runbooks.durations import parse_duration
from gpubot.errors import GpubotError

MAX_COOL_WAIT_SECONDS = 24 * 3600.0
_THERMAL = ("sw_thermal_slowdown", "hw_thermal_slowdown")


class ThermalParams(GpuParams):
    threshold_c: int = Field(85, ge=40, le=120)


class CoolParams(ThermalParams):
    below_for: float = 600.0  # how long it must stay below the threshold
    max_wait: float = 1800.0  # revert by then whatever the temperature
    poll: float = 60.0

    @field_validator("below_for", "max_wait", "poll", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> float:
        seconds = parse_duration(value)
        if seconds > MAX_COOL_WAIT_SECONDS:
            raise ValueError(f"capped at {MAX_COOL_WAIT_SECONDS:g}s")
        return seconds


async def _prometheus_temperature(ctx: ActionContext, p: GpuParams) -> float | None:
    """DCGM's view, where Prometheus has it; the agent's reading is the one acted on."""
    promql = f'DCGM_FI_DEV_GPU_TEMP{{Hostname="{p.node}",gpu="{p.gpu}"}}'
    try:
        samples = await ctx.cluster.metrics.query(promql=promql)
    except GpubotError:
        return None
    return samples[0].value if samples else None


async def plan_check(ctx: ActionContext, p: ThermalParams) -> PlanNote:
    return PlanNote(
        f"read {p.node} GPU {p.gpu} temperature, power and throttle reasons "
        f"(hot at ≥ {p.threshold_c} °C)",
        changes=False,
    )


async def run_check(ctx: ActionContext, p: ThermalParams) -> Output:
    gpu = await _gpu(ctx, p)
    prom = await _prometheus_temperature(ctx, p)
    throttling = [r for r in gpu.throttle_reasons if r in _THERMAL]
    hot = not gpu.lost and gpu.temperature_c >= p.threshold_c
    await ctx.progress(
        f"{p.node} GPU {p.gpu}: {gpu.temperature_c} °C (threshold {p.threshold_c} °C"
        + (f", Prometheus {prom:g} °C" if prom is not None else "")
        + f"), {gpu.power_draw_w:g}/{gpu.power_limit_w:g} W"
        + (f", throttling: {', '.join(gpu.throttle_reasons)}" if gpu.throttle_reasons else "")
    )
    return {
        "node": p.node,
        "gpu": p.gpu,
        "hot": hot,
        "temperature_c": gpu.temperature_c,
        "prometheus_temperature_c": prom,
        "threshold_c": p.threshold_c,
        "throttle_reasons": list(gpu.throttle_reasons),
        "thermal_throttling": bool(throttling),
        "power_draw_w": gpu.power_draw_w,
        "power_limit_w": gpu.power_limit_w,
        "lost": gpu.lost,
    }


async def plan_cool(ctx: ActionContext, p: CoolParams) -> PlanNote:
    return PlanNote(
        f"wait until {p.node} GPU {p.gpu} stays below {p.threshold_c} °C for "
        f"{p.below_for:g}s, at most {p.max_wait:g}s from the step's start (kept across restarts)",
        changes=False,
    )


async def run_cool(ctx: ActionContext, p: CoolParams) -> Output:
    """Returns when cool for `below_for`, or at `max_wait` after the step FIRST started.

    The deadline counts from ctx.started_at, which the executor keeps across restarts: a bot
    restarted after the deadline reverts at once instead of waiting all over again.
    """
    start = ctx.started_at or ctx.clock.now()
    deadline = start + timedelta(seconds=p.max_wait)
    cool_since = None
    while True:
        now = ctx.clock.now()
        gpu = await _gpu(ctx, p)
        if gpu.temperature_c < p.threshold_c:
            cool_since = cool_since or now
            if (now - cool_since).total_seconds() >= p.below_for:
                return _cool_output(p, gpu.temperature_c, "cooled", now - start)
        else:
            cool_since = None
        if now >= deadline:
            return _cool_output(p, gpu.temperature_c, "max_wait", now - start)
        remaining = (deadline - now).total_seconds()
        await ctx.clock.sleep(max(1.0, min(p.poll, remaining)))


def _cool_output(p: CoolParams, temperature: int, why: str, waited: timedelta) -> Output:
    return {
        "node": p.node,
        "gpu": p.gpu,
        "reason": why,
        "temperature_c": temperature,
        "still_hot": temperature >= p.threshold_c,
        "waited_seconds": waited.total_seconds(),
    }


async def check_cool(ctx: ActionContext, p: CoolParams) -> CheckResult:
    return await nothing_to_check(ctx, p)


SPECS: tuple[ActionSpec[Any], ...] = (
    ActionSpec(
        Action.GPU_THERMAL_CHECK,
        "Read one GPU's temperature, power and throttle reasons (agent and Prometheus).",
        ThermalParams,
        False,
        plan_check,
        run_check,
        nothing_to_check,
    ),
    ActionSpec(
        Action.GPU_WAIT_COOL,
        "Wait until a GPU stays below a temperature, or a deadline from the step's first start.",
        CoolParams,
        False,
        plan_cool,
        run_cool,
        check_cool,
    ),
)
