"""Which steps' plans ask the API server to dry-run their write: every step of a plan that no
run follows at once (a dry run, `gpubot plan`), and in a run that starts when planned only
the steps from the first one that waits for approval on (an automatic step before it writes
for real moments later, and that write is refused the same way)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from gpubot.actions.base import ActionContext, ActionSpec, CheckResult, PlanNote
from gpubot.backends.simulated import SimulatedCluster
from gpubot.domain.runbooks.loader import parse_runbook
from gpubot.engine.clock import FakeClock
from gpubot.engine.planning import make_plan
from gpubot.engine.registry import Registry
from gpubot.ports import ClusterPorts

RUNBOOK = """
name: probe-order
description: automatic steps, one that waits for approval, then an automatic one
triggers: [{command: probe-order}]
steps:
  - {id: first, action: test.write, args: {}, approval: auto}
  - {id: second, action: test.write, args: {}, approval: auto}
  - {id: asked, action: test.write, args: {}, approval: required, approvers: oncall}
  - {id: after, action: test.write, args: {}, approval: auto}
"""


class NoParams(BaseModel):
    pass


def _registry(probed: dict[str, bool]) -> Registry:
    async def plan(ctx: ActionContext, p: NoParams) -> PlanNote:
        probed[str(len(probed))] = ctx.probe
        return PlanNote("would write")

    async def run(ctx: ActionContext, p: NoParams) -> dict[str, object]:
        return {}

    async def check(ctx: ActionContext, p: NoParams) -> CheckResult:
        return CheckResult("not_done", "")

    return Registry([ActionSpec("test.write", "a write", NoParams, True, plan, run, check)])


async def _probes(*, run_now: bool) -> list[bool]:
    probed: dict[str, bool] = {}
    sim = SimulatedCluster()
    runbook = parse_runbook(RUNBOOK, path=Path("probe-order.yaml")).runbook
    await make_plan(
        runbook,
        base={},
        params={},
        cluster=ClusterPorts("sim", sim.kube, sim.agent, sim.metrics),
        registry=_registry(probed),
        clock=FakeClock(),
        run_now=run_now,
    )
    return list(probed.values())


async def test_a_run_that_starts_at_once_skips_the_dry_run_of_its_leading_automatic_steps() -> None:
    assert await _probes(run_now=True) == [False, False, True, True]


async def test_a_plan_no_run_follows_dry_runs_every_write() -> None:
    assert await _probes(run_now=False) == [True, True, True, True]
