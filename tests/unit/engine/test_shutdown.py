"""Shutdown (SIGTERM) during a drain that waits on terminating pods: no step starts, the
running action is interrupted, its step is left RUNNING, and the next process resumes it
without evicting any pod twice."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace
from typing import Any

from leadership import Flag

from gpubot.backends.simulated.scenarios import stop_kubelet
from gpubot.domain.runbooks.runs import RunStatus, StepStatus
from gpubot.engine.clock import FakeClock
from gpubot.engine.service import GpubotService

MakeHarness = Any  # the `harness` fixture in conftest.py
NODE = "gpu-node-12"

DRAIN = """
name: drain
triggers: [{command: drain}]
params: {node: {type: node}}
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
  - id: drain
    action: node.drain
    args: {node: "{{ params.node }}"}
    approval: auto
    timeout: 10m
  - {id: after, action: node.uncordon, args: {node: "{{ params.node }}"}, approval: auto}
"""


class StalledClock(FakeClock):
    """Fake time in which a wait never ends: the drain stays in its poll until interrupted."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = asyncio.Event()

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.waiting.set()
        await asyncio.Event().wait()


def count_evictions(kube: Any) -> Counter[str]:
    counts: Counter[str] = Counter()
    evict = kube.evict

    async def counting(*, namespace: str, name: str, **kw: Any) -> None:
        counts[f"{namespace}/{name}"] += 1
        await evict(namespace=namespace, name=name, **kw)

    kube.evict = counting
    return counts


async def test_shutdown_interrupts_a_waiting_drain_and_the_next_process_resumes_it(
    harness: MakeHarness,
) -> None:
    clock = StalledClock()
    h = harness(DRAIN, clock=clock)
    stop_kubelet(h.cluster, node=NODE)
    evictions = count_evictions(h.cluster.kube)
    _plan, run = await h.service.start_command_run(
        runbook="drain", args={"node": NODE}, requested_by="U1", cluster="sim"
    )
    assert run is not None
    await asyncio.wait_for(clock.waiting.wait(), timeout=10)

    loop = asyncio.get_running_loop()
    began = loop.time()
    await h.service.shutdown(grace_seconds=5, interrupt_after=0)
    assert loop.time() - began < 1.0  # interrupted, not waited out
    assert not h.service._tasks

    steps = {s.step_id: s for s in await h.store.steps(run.id)}
    assert steps["drain"].status is StepStatus.RUNNING  # for the next leader to check
    assert steps["after"].status is StepStatus.PENDING  # nothing started after the signal
    assert (await h.store.get_run(run.id)).status is RunStatus.RUNNING
    kinds = [e.kind for e in await h.store.events(run_id=run.id)]
    assert "step.interrupted" in kinds
    assert "step.failed" not in kinds
    first = dict(evictions)
    assert first
    assert set(first.values()) == {1}

    # The next process (same store, same cluster): the kubelet is back and finished the
    # terminating pods; recovery resumes the drain, which evicts nothing again.
    with h.cluster.mutation() as state:
        state.node(NODE).kubelet = True
        state.pods = [p for p in state.pods if not p.deletion_timestamp]
    h2 = harness(DRAIN, store=h.store, cluster=h.cluster, clock=FakeClock())
    await h2.service.background.recover()
    await h2.service.wait_idle()
    assert (await h2.store.get_run(run.id)).status is RunStatus.SUCCEEDED
    assert dict(evictions) == first
    kinds = [e.kind for e in await h2.store.events(run_id=run.id)]
    assert "step.recovered" in kinds


async def test_a_step_that_finishes_within_the_grace_is_not_interrupted(
    harness: MakeHarness,
) -> None:
    """Steps about to finish get `interrupt_after`; a quick run completes normally."""
    h = harness(DRAIN)
    _plan, run = await h.service.start_command_run(
        runbook="drain", args={"node": NODE}, requested_by="U1", cluster="sim"
    )
    assert run is not None
    await h.service.shutdown(grace_seconds=10, interrupt_after=5)
    kinds = [e.kind for e in await h.store.events(run_id=run.id)]
    assert "step.interrupted" not in kinds


async def test_after_shutdown_no_run_advances(harness: MakeHarness) -> None:
    h = harness(DRAIN)
    await h.service.shutdown(grace_seconds=1, interrupt_after=0)
    _plan, run = await h.service.start_command_run(
        runbook="drain", args={"node": NODE}, requested_by="U1", cluster="sim"
    )
    assert run is not None
    await h.service.wait_idle()
    steps = await h.store.steps(run.id)
    assert {s.status for s in steps} == {StepStatus.PENDING}


async def test_a_replica_that_loses_the_lease_stops_its_running_drain(
    harness: MakeHarness,
) -> None:
    """The new leader resumes the step; the old one must not go on evicting meanwhile."""
    clock = StalledClock()
    h = harness(DRAIN, clock=clock)
    lease = Flag()
    service = GpubotService(replace(h.service.e, leadership=lease))
    service.executor.leader_check_seconds = 0.01
    stop_kubelet(h.cluster, node=NODE)
    evictions = count_evictions(h.cluster.kube)
    _plan, run = await service.start_command_run(
        runbook="drain", args={"node": NODE}, requested_by="U1", cluster="sim"
    )
    assert run is not None
    await asyncio.wait_for(clock.waiting.wait(), timeout=10)

    lease.leader = False
    await asyncio.wait_for(service.wait_idle(), timeout=5)
    steps = {s.step_id: s for s in await h.store.steps(run.id)}
    assert steps["drain"].status is StepStatus.RUNNING
    assert steps["after"].status is StepStatus.PENDING
    kinds = [e.kind for e in await h.store.events(run_id=run.id)]
    assert "step.interrupted" in kinds
    assert set(evictions.values()) == {1}
