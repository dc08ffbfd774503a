"""An engine on fakes: SQLite, the simulated cluster, a recording notifier, a fake clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from gpubot.actions.base import (
    ActionContext,
    ActionSpec,
    CheckResult,
    Output,
    Params,
    PlanNote,
)
from gpubot.backends.recording_chat import RecordingNotifier
from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.store import SqlStore, open_store
from gpubot.domain.control.approvals import ApproverGroup
from gpubot.domain.control.safety_caps import AttemptCap, BlastRadius, Policy
from gpubot.domain.runbooks.loader import parse_runbook
from gpubot.domain.runbooks.runs import Run
from gpubot.engine.clock import FakeClock
from gpubot.engine.deps import Engine
from gpubot.engine.registry import Registry, builtin_registry
from gpubot.engine.service import GpubotService
from gpubot.errors import PermanentStepError, TemporaryStepError
from gpubot.ports import NodeAgent

ONCALL = ApproverGroup("oncall", users=frozenset({"U1", "U2", "U3"}), usergroups=frozenset({"S9"}))


class ProbeParams(Params):
    key: str = "probe"
    fail_times: int = 0
    permanent: bool = False
    sleep: float = 0.0


@dataclass
class Probe:
    """A mutating test action that counts its calls and fails on demand."""

    calls: dict[str, int] = field(default_factory=dict)
    applied: set[str] = field(default_factory=set)
    check_state: str | None = None  # overrides check()'s answer when set

    def specs(self) -> list[ActionSpec[Any]]:
        async def plan(ctx: ActionContext, p: ProbeParams) -> PlanNote:
            return PlanNote(f"probe {p.key}")

        async def run(ctx: ActionContext, p: ProbeParams) -> Output:
            n = self.calls[p.key] = self.calls.get(p.key, 0) + 1
            if p.sleep:
                await asyncio.sleep(p.sleep)
            if n <= p.fail_times:
                if p.permanent:
                    raise PermanentStepError(f"{p.key} broke for good")
                raise TemporaryStepError(f"{p.key} flaked ({n})", delay=1.0)
            self.applied.add(p.key)
            return {"key": p.key, "call": n}

        async def check(ctx: ActionContext, p: ProbeParams) -> CheckResult:
            state = self.check_state or ("done" if p.key in self.applied else "not_done")
            return CheckResult(state, f"probe {p.key}: {state}", {"key": p.key})  # type: ignore[arg-type]

        return [
            ActionSpec("test.probe", "test action", ProbeParams, True, plan, run, check),
        ]


@dataclass
class Harness:
    service: GpubotService
    store: SqlStore
    notifier: RecordingNotifier
    cluster: SimulatedCluster
    clock: FakeClock
    probe: Probe

    async def run_of(self, run_id: str) -> Run:
        await self.service.wait_idle()
        return await self.store.get_run(run_id)

    async def step_status(self, run_id: str) -> dict[str, str]:
        await self.service.wait_idle()
        return {s.step_id: s.status.value for s in await self.store.steps(run_id)}


MakeHarness = Callable[..., Harness]


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[MakeHarness]:
    made: list[Harness] = []

    def make(
        *runbooks: str,
        policy: Policy | None = None,
        store: SqlStore | None = None,
        cluster: SimulatedCluster | None = None,
        probe: Probe | None = None,
        clock: FakeClock | None = None,
        agent: NodeAgent | None = None,  # default: the simulated cluster itself
    ) -> Harness:
        probe = probe or Probe()
        registry = Registry([*builtin_registry().specs(), *probe.specs()])
        loaded = [
            parse_runbook(text, path=tmp_path / f"rb{i}.yaml").runbook
            for i, text in enumerate(runbooks)
        ]
        cluster = cluster or SimulatedCluster.default()
        clock = clock or FakeClock()
        store = store or open_store(f"sqlite:///{tmp_path}/engine.db")
        notifier = RecordingNotifier()
        engine = Engine(
            store=store,
            registry=registry,
            runbooks={rb.name: rb for rb in loaded},
            clusters={"sim": replace(cluster.ports(), agent=agent or cluster.agent)},
            notifier=notifier,
            clock=clock,
            policy=policy
            or Policy(
                groups={"oncall": ONCALL},
                blast=BlastRadius(max_cordoned_count=4),
                attempts=AttemptCap(max_attempts=3, window=timedelta(hours=24)),
            ),
        )
        h = Harness(GpubotService(engine), store, notifier, cluster, clock, probe)
        made.append(h)
        return h

    yield make
    for h in made:
        await h.service.wait_idle()
        await h.store.close()
