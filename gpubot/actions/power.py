"""GPU power steps through the node agent: cap to a fraction of the default, restore it."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gpubot.actions.base import ActionContext, ActionSpec, CheckResult, Output, PlanNote
from gpubot.actions.gpu import GpuParams, _gpu
from gpubot.domain.fleet.cluster import GpuState
from gpubot.domain.runbooks.action_names import Action


class CapParams(GpuParams):
    fraction: float = Field(0.7, gt=0, le=1, description="of the GPU's default power limit")


class RestoreParams(GpuParams):
    # The limit before the cap (the cap step's output previous_w); unset: the default limit.
    watts: float | None = Field(None, gt=0)


def cap_target(gpu: GpuState, fraction: float) -> float:
    """fraction * default, clamped to the device's range, in whole watts as NVML sets them."""
    wanted = round(gpu.power_default_w * fraction)
    return float(min(max(wanted, gpu.power_min_w), gpu.power_max_w))


def _limits(gpu: GpuState) -> dict[str, Any]:
    return {
        "default_w": gpu.power_default_w,
        "range_w": [gpu.power_min_w, gpu.power_max_w],
    }


async def plan_cap(ctx: ActionContext, p: CapParams) -> PlanNote:
    gpu = await _gpu(ctx, p)
    target = cap_target(gpu, p.fraction)
    clamp = "" if target == round(gpu.power_default_w * p.fraction) else ", clamped to the range"
    summary = (
        f"cap {p.node} GPU {p.gpu} power limit {gpu.power_limit_w:g} W → {target:g} W "
        f"({p.fraction:.0%} of the {gpu.power_default_w:g} W default{clamp}; range "
        f"{gpu.power_min_w:g}-{gpu.power_max_w:g} W); now {gpu.temperature_c} °C"
    )
    facts = {"previous_w": gpu.power_limit_w, "target_w": target, **_limits(gpu)}
    return PlanNote(summary, changes=gpu.power_limit_w != target, facts=facts)


async def run_cap(ctx: ActionContext, p: CapParams) -> Output:
    before = await _gpu(ctx, p)
    target = cap_target(before, p.fraction)
    after = await ctx.cluster.agent.set_power_limit(node=p.node, gpu=p.gpu, watts=target)
    await ctx.progress(
        f"{p.node} GPU {p.gpu}: power limit {before.power_limit_w:g} W → {after.power_limit_w:g} W"
    )
    return {
        "node": p.node,
        "gpu": p.gpu,
        "previous_w": before.power_limit_w,
        "limit_w": after.power_limit_w,
        "temperature_c_before": before.temperature_c,
        **_limits(before),
    }


async def check_cap(ctx: ActionContext, p: CapParams) -> CheckResult:
    gpu = await _gpu(ctx, p)
    target = cap_target(gpu, p.fraction)
    if gpu.power_limit_w == target:
        # The limit before the cap is gone with the crash; the default is the safe revert.
        return CheckResult(
            "done",
            f"{p.node} GPU {p.gpu} is at {target:g} W already",
            {
                "node": p.node,
                "gpu": p.gpu,
                "previous_w": gpu.power_default_w,
                "limit_w": target,
                **_limits(gpu),
            },
        )
    return CheckResult("not_done", f"{p.node} GPU {p.gpu} is at {gpu.power_limit_w:g} W")


def _restore_target(gpu: GpuState, p: RestoreParams) -> float:
    return p.watts if p.watts is not None else gpu.power_default_w


async def plan_restore(ctx: ActionContext, p: RestoreParams) -> PlanNote:
    gpu = await _gpu(ctx, p)
    target = _restore_target(gpu, p)
    what = "the limit before the cap" if p.watts is not None else "the default limit"
    return PlanNote(
        f"restore {p.node} GPU {p.gpu} power limit {gpu.power_limit_w:g} W → {target:g} W ({what})",
        changes=gpu.power_limit_w != target,
        facts={"previous_w": gpu.power_limit_w, "target_w": target},
    )


async def run_restore(ctx: ActionContext, p: RestoreParams) -> Output:
    before = await _gpu(ctx, p)
    target = _restore_target(before, p)
    after = await ctx.cluster.agent.set_power_limit(node=p.node, gpu=p.gpu, watts=target)
    return {
        "node": p.node,
        "gpu": p.gpu,
        "previous_w": before.power_limit_w,
        "limit_w": after.power_limit_w,
        "temperature_c": after.temperature_c,
    }


async def check_restore(ctx: ActionContext, p: RestoreParams) -> CheckResult:
    gpu = await _gpu(ctx, p)
    target = _restore_target(gpu, p)
    if gpu.power_limit_w == target:
        return CheckResult(
            "done",
            f"{p.node} GPU {p.gpu} is back at {target:g} W",
            {"node": p.node, "gpu": p.gpu, "limit_w": target},
        )
    return CheckResult("not_done", f"{p.node} GPU {p.gpu} is still at {gpu.power_limit_w:g} W")


SPECS: tuple[ActionSpec[Any], ...] = (
    ActionSpec(
        Action.GPU_POWER_CAP,
        "Cap one GPU's power limit to a fraction of its default (clamped to the device range).",
        CapParams,
        True,
        plan_cap,
        run_cap,
        check_cap,
        auto_allowed=False,
    ),
    ActionSpec(
        Action.GPU_POWER_RESTORE,
        "Set one GPU's power limit back to the recorded previous limit, or its default.",
        RestoreParams,
        True,
        plan_restore,
        run_restore,
        check_restore,
    ),
)
