"""Steps that talk or pause: notify the incident thread, wait a while."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from gpubot.actions.base import ActionContext, ActionSpec, CheckResult, Output, Params, PlanNote
from gpubot.domain.runbooks.action_names import Action
from gpubot.domain.runbooks.durations import parse_duration

MAX_WAIT_SECONDS = 3600.0


class NotifyParams(Params):
    message: str = Field(min_length=1, max_length=3000)
    mention: str | None = Field(default=None, pattern=r"^[UWS][A-Z0-9]{2,20}$")


class WaitParams(Params):
    duration: float
    reason: str = ""

    @field_validator("duration", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> float:
        seconds = parse_duration(value)
        if seconds > MAX_WAIT_SECONDS:
            raise ValueError(f"wait is capped at {MAX_WAIT_SECONDS:g}s")
        return seconds


def _mention(p: NotifyParams) -> tuple[str, ...]:
    """The runbook's mention (config, an id checked above): the one live ping."""
    if not p.mention:
        return ()
    return (f"<!subteam^{p.mention}>" if p.mention.startswith("S") else f"<@{p.mention}>",)


def _text(p: NotifyParams) -> str:
    return " ".join([*_mention(p), p.message])


async def plan_notify(ctx: ActionContext, p: NotifyParams) -> PlanNote:
    return PlanNote(f"post to the incident thread: {_text(p)!r}")


async def run_notify(ctx: ActionContext, p: NotifyParams) -> Output:
    await ctx.progress(_text(p), mentions=_mention(p))
    return {"posted": _text(p)}


async def check_notify(ctx: ActionContext, p: NotifyParams) -> CheckResult:
    # A message cut off by a crash is better repeated than lost.
    return CheckResult("not_done", "a notification may be posted again")


async def plan_wait(ctx: ActionContext, p: WaitParams) -> PlanNote:
    why = f" ({p.reason})" if p.reason else ""
    return PlanNote(f"wait {p.duration:g}s{why}", changes=False)


async def run_wait(ctx: ActionContext, p: WaitParams) -> Output:
    await ctx.clock.sleep(p.duration)
    return {"waited_seconds": p.duration}


async def check_wait(ctx: ActionContext, p: WaitParams) -> CheckResult:
    return CheckResult("not_done", "waiting again is harmless")


SPECS: tuple[ActionSpec[Any], ...] = (
    ActionSpec(
        Action.NOTIFY,
        "Post a message (optionally mentioning a user or group) to the thread.",
        NotifyParams,
        False,
        plan_notify,
        run_notify,
        check_notify,
    ),
    ActionSpec(
        Action.WAIT,
        "Pause the run for a duration (at most 1 h).",
        WaitParams,
        False,
        plan_wait,
        run_wait,
        check_wait,
    ),
)
