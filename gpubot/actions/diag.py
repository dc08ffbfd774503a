"""gpu.diag: DCGM diagnostics on a node's GPUs through its agent, the check before release."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from gpubot.actions.base import (
    ActionContext,
    ActionSpec,
    Output,
    Params,
    PlanNote,
    nothing_to_check,
)
from gpubot.actions.gpu_ledger import named, record_for
from gpubot.domain.k8s_names import NodeName
from gpubot.domain.runbooks.action_names import Action
from gpubot.errors import GpubotError, PermanentStepError
from gpubot.knowledge.dcgm_diag import DiagReport, DiagUnavailable, cap

LEVEL_NAMES = {0: "off", 1: "quick", 2: "medium", 3: "long"}


class DiagParams(Params):
    node: NodeName
    # None: the configured policy.diag_level; 0 turns diagnostics off.
    level: int | None = Field(None, ge=0, le=3)
    gpus: list[int] = Field(default_factory=list, max_length=64)  # empty: every GPU

    @field_validator("level", mode="before")
    @classmethod
    def _level(cls, value: Any) -> Any:
        return None if value in ("", "None", None) else value

    @field_validator("gpus", mode="before")
    @classmethod
    def _gpus(cls, value: Any) -> Any:
        """A runbook passes "", one index, or "0,3"; each must read as an int 0-63."""
        if value in ("", None, "None"):
            return []
        if isinstance(value, int) and not isinstance(value, bool):
            value = [value]
        if isinstance(value, str):
            value = [part.strip() for part in value.strip("[]").split(",") if part.strip()]
        return value

    @field_validator("gpus")
    @classmethod
    def _gpu_range(cls, value: list[int]) -> list[int]:
        if any(not 0 <= g <= 63 for g in value):
            raise ValueError("GPU indexes are 0-63")
        return sorted(set(value))


# What each policy.diag_unavailable does when DCGM cannot run on the node, as the plan says it.
UNAVAILABLE_NEXT: dict[DiagUnavailable, str] = {
    "approve": "the release then asks for an approval that names the missing check "
    "(policy.diag_unavailable: approve)",
    "stop": "the node then stays cordoned and tainted for a human (policy.diag_unavailable: stop)",
}


class Diagnose:
    """gpu.diag with the configured default level and what to do when DCGM cannot run."""

    def __init__(self, default_level: int, unavailable: DiagUnavailable = "approve") -> None:
        self.default_level = default_level
        self.unavailable = unavailable

    def level(self, ctx: ActionContext, p: DiagParams) -> int:
        """The step's own level, else the node's pool's, else policy.diag_level."""
        if p.level is not None:
            return p.level
        return self.default_level if ctx.diag_level is None else ctx.diag_level

    async def plan(self, ctx: ActionContext, p: DiagParams) -> PlanNote:
        level = self.level(ctx, p)
        if level == 0:
            return PlanNote(
                f"DCGM diagnostics are off (level 0): {p.node} is not diagnosed",
                changes=False,
                facts={"level": 0, "ran": False},
            )
        try:
            why = await ctx.cluster.agent.diag_status(node=p.node)
        except GpubotError as exc:
            why, unasked = None, f" (whether DCGM answers could not be asked now: {exc})"
        else:
            unasked = ""
        if why is not None:
            next_ = UNAVAILABLE_NEXT[self.unavailable]
            said = f"DCGM diagnostics cannot run on {p.node}: {why}; {next_}"
            return PlanNote(
                said,
                changes=False,
                facts={"level": level, "ran": False, "unavailable": True, "missing_check": why},
                warning=said,
            )
        which = f"GPU(s) {p.gpus}" if p.gpus else "all GPUs"
        return PlanNote(
            f"run DCGM diagnostics level {level} ({LEVEL_NAMES[level]}) on {which} of {p.node} "
            "(`dcgmi diag`, through the node agent); it loads the GPUs and is refused while "
            f"pods hold them{unasked}",
            facts={"level": level, "ran": True},
        )

    async def run(self, ctx: ActionContext, p: DiagParams) -> Output:
        level = self.level(ctx, p)
        if level == 0:
            return {
                "node": p.node,
                "level": 0,
                "ran": False,
                "passed": True,
                "failed_tests": [],
                "failed_text": "",
                "summary": "DCGM diagnostics are off (policy.diag_level 0): not run",
                "unavailable": False,
                "missing_check": "",
                "gpus": [],
                "version": "",
            }
        why = await ctx.cluster.agent.diag_status(node=p.node)
        if why is not None:
            if self.unavailable == "stop":
                raise PermanentStepError(
                    f"DCGM diagnostics cannot run on {p.node}: {why} (policy.diag_unavailable: "
                    "stop: the node stays out of service for a human)"
                )
            return unavailable_output(p.node, level, why)
        await ctx.progress(f"DCGM diagnostics level {level} on {p.node}…")
        report = await ctx.cluster.agent.diag(node=p.node, level=level, gpus=p.gpus or None)
        await record_results(ctx, p.node, report)
        return output(p.node, report)


async def record_results(ctx: ActionContext, node: str, report: DiagReport) -> None:
    """One `diag` row per tested GPU in the ledger: its worst status (pass, warn, fail, skip)
    and, for a failure, the failing tests. The UUIDs come from the node agent's GPU list; an
    agent that cannot be read now leaves the ledger without them (the step's result stands)."""
    if ctx.ledger is None or ctx.dry_run:
        return
    try:
        gpus = {g.index: g for g in await ctx.cluster.agent.gpus(node=node)}
    except GpubotError:
        return
    for index in report.gpus():
        if (gpu := gpus.get(index)) is None:
            continue
        failing = [r.test for r in report.failures if r.gpu in (index, None)]
        detail = f"level {report.level}" + (f": failed {', '.join(failing)}" if failing else "")
        await record_for(
            ctx,
            node=node,
            gpus=[named(gpu)],
            kind="diag",
            result=report.gpu_status(index),
            detail=detail,
        )


def unavailable_output(node: str, level: int, why: str) -> Output:
    """DCGM could not run and policy.diag_unavailable is `approve`: not a pass. The runbook
    releases only through an approval that names `missing_check`."""
    return {
        "node": node,
        "level": level,
        "ran": False,
        "passed": False,
        "unavailable": True,
        "missing_check": f"DCGM diagnostics level {level} could not run: {why}",
        "failed_tests": [],
        "failed_text": "",
        "summary": f"DCGM diagnostics could not run on {node}: {why}",
        "gpus": [],
        "version": "",
    }


def output(node: str, report: DiagReport) -> Output:
    """What the step records and later steps read (`steps.diag.output.…`)."""
    return {
        "node": node,
        "level": report.level,
        "ran": True,
        "passed": report.passed,
        "unavailable": False,
        "missing_check": "",
        "failed_tests": report.failed_tests(),
        "failed_text": failed_text(report),
        "summary": report.summary(),
        "gpus": [{"gpu": g, "status": report.gpu_status(g)} for g in report.gpus()],
        "version": report.version,
    }


def failed_text(report: DiagReport, *, limit: int = 6) -> str:
    """The failing tests with DCGM's own messages, one line each, for the incident thread."""
    lines = [
        f"{r.test} on GPU {r.gpu if r.gpu is not None else 'all'}: "
        + (cap(" ".join(r.messages), 240) if r.messages else "no message from DCGM")
        for r in report.failures[:limit]
    ]
    if report.runtime_error:
        lines.insert(0, f"DCGM could not run the tests: {report.runtime_error}")
    if len(report.failures) > limit:
        lines.append(f"… and {len(report.failures) - limit} more")
    return "\n".join(lines)


def specs(
    default_level: int = 1, unavailable: DiagUnavailable = "approve"
) -> tuple[ActionSpec[Any], ...]:
    d = Diagnose(default_level, unavailable)
    return (
        ActionSpec(
            Action.GPU_DIAG,
            "Run DCGM diagnostics (dcgmi diag -r level, 1-3; default policy.diag_level, 0 = off) "
            "on a node's GPUs through its agent; outputs passed, failed_tests (with DCGM's "
            "messages) and a summary. Not `mutating`: it changes no setting on the node or the "
            "GPU and is safe to run again after a restart (so nothing to check), but it loads "
            "the GPUs for seconds to tens of minutes, so the agent refuses while a process "
            "holds a GPU it would test and asks for the mutate token. Run it on a drained node.",
            DiagParams,
            False,
            d.plan,
            d.run,
            nothing_to_check,
            outputs={
                "node": "the node's name",
                "level": "the DCGM level run (0: diagnostics off)",
                "ran": "DCGM ran (false when the level is 0, or DCGM could not run)",
                "passed": "no test failed, DCGM reported no run-time error, and a test ran",
                "unavailable": "DCGM could not run on the node (no dcgmi, host engine down) "
                "and policy.diag_unavailable is approve: not a pass",
                "missing_check": "when unavailable: the check that did not run, and why, for "
                "the release's approval to name",
                "failed_tests": "the failing tests: [{test, gpu, messages}] with DCGM's messages",
                "failed_text": "the failing tests with DCGM's messages, one line each",
                "summary": "one line: passed, or which tests failed on which GPUs",
                "gpus": "per GPU its worst status: [{gpu, status}] (pass, warn, fail, skip)",
                "version": "DCGM's version, as it reports it",
            },
        ),
    )
