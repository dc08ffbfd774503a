"""The shipped xid79 runbook, killed at every boundary of every mutating step and restarted:
each cluster change happens exactly once, and no step is skipped."""

from __future__ import annotations

import asyncio
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from reliability_crash import Crash, CrashingStore, Fate, counting_ports

from gpubot.backends.recording_chat import RecordingNotifier
from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.simulated.fleet import default_fleet
from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.backends.store import open_store
from gpubot.config import load_settings
from gpubot.domain.control.approvals import ApprovalStatus
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.domain.runbooks.runs import RunStatus
from gpubot.engine.clock import FakeClock
from gpubot.loaded_rules import shipped_runbooks_dir
from gpubot.wiring import build_app

FIXTURE = Path(__file__).parents[1] / "fixtures" / "alertmanager" / "xid79_firing.json"
MUTATING = ("cordon", "taint", "drain", "reset", "untaint", "uncordon")
BOUNDARIES = ("before-start", "before-effect", "before-done", "after-done")
POINTS = [f"{b}:{s}" for s in MUTATING for b in BOUNDARIES] + ["mid-effect:drain"]


@dataclass
class Outcome:
    effects: Counter[tuple[Any, ...]]
    steps: dict[str, str]
    run: str
    started: Counter[str]  # step.started audit events per step
    recovered: dict[str, str]  # step → check() answer after the restart
    chain: list[Any]
    died: bool


async def _life(
    tmp: Path,
    cluster: SimulatedCluster,
    fate: Fate,
    effects: Counter[tuple[Any, ...]],
    clock: FakeClock,
    *,
    first: bool,
) -> None:
    """One process: the alert arrives (first life) or recovery starts (a restart); then
    approve whatever the run asks, until it ends or the process dies. The cluster outlives
    the process, as a real one does; everything gpubot knows comes back from the store."""
    store = CrashingStore(open_store(f"sqlite:///{tmp / 'gpubot.db'}"), fate)
    settings = load_settings(
        None,
        store={"url": f"sqlite:///{tmp / 'unused.db'}"},
        slack={"mode": "off"},
        policy={"groups": {"oncall": {"users": ["U1"]}}},
        # Only the runbook under test: parsing all shipped YAML per life costs seconds.
        runbooks={"builtin": False, "dirs": [str(tmp / "runbooks")]},
    )
    app = build_app(
        settings,
        store=store,  # type: ignore[arg-type]
        clusters={"sim": counting_ports(cluster, fate, effects)},
        notifier=RecordingNotifier(),
        clock=clock,
    )
    try:
        if first:
            payload = AlertmanagerPayload.model_validate_json(FIXTURE.read_bytes())
            await app.service.process(await app.service.ingest(payload))
        else:
            await app.service.background.recover()
        for _ in range(50):
            await app.service.wait_idle()
            if fate.dead:
                return
            [run] = await store.list_runs()
            if run.status.finished or run.status is RunStatus.NEEDS_HUMAN:
                return
            for request in await store.approvals_for(run.id):
                if request.status is ApprovalStatus.PENDING:
                    await app.service.vote(approval_id=request.id, user="U1", decision="approve")
        raise AssertionError("the run never finished")
    except Crash:
        return
    finally:
        await app.service.wait_idle()
        await store._inner.close()


def small_cluster() -> SimulatedCluster:
    """Four nodes of the default fleet, with their pods: every change to the simulated
    cluster copies its whole state, and 16 nodes would make each case slow."""
    state = default_fleet(seed=7)
    kept = {f"gpu-node-{n:02d}" for n in range(5, 9)}
    state.nodes = {name: node for name, node in state.nodes.items() if name in kept}
    state.pods = [p for p in state.pods if p.node in kept]
    # Budgets sized for the whole fleet would block every eviction here.
    state.pdbs = [b for b in state.pdbs if state.pdb_info(b).disruptions_allowed > 0]
    return SimulatedCluster(state)


def _play(tmp: Path, point: str | None) -> Outcome:
    (tmp / "runbooks").mkdir()
    shutil.copy(shipped_runbooks_dir() / "xid79.yaml", tmp / "runbooks")
    cluster = small_cluster()
    inject_xid(cluster, node="gpu-node-07", gpu=3)
    effects: Counter[tuple[Any, ...]] = Counter()
    clock = FakeClock()
    fate = Fate(point)
    asyncio.run(_life(tmp, cluster, fate, effects, clock, first=True))
    died = fate.dead
    if died:  # the restart: a new process on the same database and the same cluster
        asyncio.run(_life(tmp, cluster, Fate(), effects, clock, first=False))

    async def read() -> Outcome:
        store = open_store(f"sqlite:///{tmp / 'gpubot.db'}")
        try:
            [run] = await store.list_runs()
            events = await store.events()
            return Outcome(
                effects=effects,
                steps={s.step_id: s.status.value for s in await store.steps(run.id)},
                run=run.status.value,
                started=Counter(e.step or "" for e in events if e.kind == "step.started"),
                recovered={
                    e.step or "": str(e.result["check"])
                    for e in events
                    if e.kind == "step.recovered"
                },
                chain=await store.verify(),
                died=died,
            )
        finally:
            await store.close()

    return asyncio.run(read())


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """The same incident with no crash: what every crashed run must end up matching."""
    outcome = _play(tmp_path_factory.mktemp("baseline"), None)
    assert outcome.run == "succeeded"
    assert {outcome.steps[s] for s in MUTATING} == {"succeeded"}
    assert max(outcome.effects.values()) == 1
    return outcome


def test_baseline_changes_the_cluster_once_per_mutation(baseline: Outcome) -> None:
    """Without a crash, the runbook cordons, taints, evicts each pod, resets, untaints and
    uncordons, each exactly once: the reference the crash cases are held to."""
    kinds = Counter(key[0] for key in baseline.effects)
    assert kinds["set_unschedulable"] == 2  # cordon, uncordon
    assert kinds["set_taint"] == 2  # taint, untaint
    assert kinds["reset_gpu"] == 1
    assert kinds["evict"] >= 1
    assert set(baseline.started) >= set(MUTATING)


@pytest.mark.parametrize("point", POINTS)
def test_crash_at_step_boundary_then_restart(tmp_path: Path, baseline: Outcome, point: str) -> None:
    """Dies at `point`, restarts from the store and the cluster's live state: every cluster
    change of the baseline happens exactly once (none twice, none missing), every step ends
    as in the baseline, the interrupted step re-runs only when live state shows it had not
    taken effect, and the audit chain verifies."""
    boundary, step = point.split(":")
    outcome = _play(tmp_path, point)
    assert outcome.died, f"the process never reached {point}"
    assert outcome.run == "succeeded"
    assert outcome.steps == baseline.steps  # none skipped, none failed
    assert outcome.effects == baseline.effects  # each mutation exactly once
    assert outcome.chain == []

    reruns = {"before-effect": 2, "mid-effect": 2}.get(boundary, 1)
    assert outcome.started[step] == reruns
    for other in MUTATING:
        if other != step:
            assert outcome.started[other] == 1, other
    checked = {"before-effect": "not_done", "mid-effect": "not_done", "before-done": "done"}
    if boundary in checked:  # RUNNING at the crash: live state decided
        assert outcome.recovered == {step: checked[boundary]}
    else:  # nothing was RUNNING: no guesswork needed
        assert outcome.recovered == {}
