"""The executor decides each step from the run as read in the transaction of the write before
it (the run's creation, the last step's record) instead of a read of its own; a view is used
only when no other write to the run began while it was being written."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from gpubot.domain.runbooks.runs import RunStatus, StepStatus
from gpubot.engine.recorder import RunRecorder

MakeHarness = Any  # the `harness` fixture in conftest.py

RUNBOOK = """
name: probe-thrice
triggers: [{command: probe-thrice}]
params: {node: {type: node}}
target: node
steps:
  - {id: one, action: test.probe, args: {key: "{{ params.node }}-1"}, approval: auto}
  - {id: two, action: test.probe, args: {key: "{{ params.node }}-2"}, approval: auto}
  - {id: three, action: test.probe, args: {key: "{{ params.node }}-3"}, approval: auto}
"""


def counted(store: Any, name: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each call of the store's method `name`, by its first argument."""
    calls: list[str] = []
    inner = getattr(store, name)

    async def counting(*args: Any, **kw: Any) -> Any:
        calls.append(str(args[0]) if args else "")
        return await inner(*args, **kw)

    monkeypatch.setattr(store, name, counting)
    return calls


async def test_a_run_reads_its_state_only_in_its_own_writes(
    harness: MakeHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three automatic steps, one after the other: every look at the run comes from the
    write before it, so the run's state is never read on its own; the steps still run in
    order, once each."""
    h = harness(RUNBOOK)
    reads = counted(h.store, "run_state", monkeypatch)
    _plan, run = await h.service.start_command_run(
        runbook="probe-thrice", args={"node": "gpu-node-01"}, requested_by="U1", cluster="sim"
    )
    assert run is not None
    await h.service.wait_idle()
    assert (await h.store.get_run(run.id)).status is RunStatus.SUCCEEDED
    assert h.probe.calls == {"gpu-node-01-1": 1, "gpu-node-01-2": 1, "gpu-node-01-3": 1}
    finished = [e.step for e in await h.store.events(run_id=run.id) if e.kind == "step.finished"]
    assert finished == ["one", "two", "three"]
    assert reads == []


async def test_a_second_advance_waiting_behind_the_first_reads_the_run_itself(
    harness: MakeHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view handed to an advance that must wait for the run's lock is stale by the time
    it gets the lock: that advance reads the run instead."""
    h = harness(RUNBOOK)
    _plan, run = await h.service.start_command_run(
        runbook="probe-thrice", args={"node": "gpu-node-02"}, requested_by="U1", cluster="sim"
    )
    assert run is not None
    await h.service.wait_idle()
    stale = await h.store.run_state(run.id)
    reads = counted(h.store, "run_state", monkeypatch)
    executor = h.service.executor
    lock = executor._locks.setdefault(run.id, asyncio.Lock())
    await lock.acquire()
    waiting = asyncio.create_task(executor.advance(run.id, view=stale))
    await asyncio.sleep(0)
    lock.release()
    finished = await waiting
    assert reads == [run.id]
    assert finished.status is RunStatus.SUCCEEDED
    assert set(h.probe.calls.values()) == {1}  # nothing ran again from the stale view


class GatedStore:
    """The real store; save_step_read waits at `gate` after its transaction committed, so
    a test can start other writes while it is in flight."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.gate = asyncio.Event()
        self.committed: asyncio.Queue[None] = asyncio.Queue()  # one item per write waiting

    async def save_step_read(self, *args: Any, **kw: Any) -> Any:
        view = await self._inner.save_step_read(*args, **kw)
        self.committed.put_nowait(None)
        await self.gate.wait()
        return view

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def _recorder_on_a_started_run(h: Any) -> tuple[RunRecorder, GatedStore, Any, Any]:
    _plan, run = await h.service.start_command_run(
        runbook="probe-thrice",
        args={"node": "gpu-node-03"},
        requested_by="U1",
        cluster="sim",
        dry_run=True,
    )
    assert run is not None
    await h.service.wait_idle()
    gated = GatedStore(h.store)
    recorder = RunRecorder(replace(h.service.e, store=gated))
    [first, *_] = await h.store.steps(run.id)
    return recorder, gated, run, first


async def test_a_write_begun_during_a_step_write_drops_its_view(harness: MakeHarness) -> None:
    """The run is cancelled (another write to it) while a step's last record is in flight:
    the view that record read back is not kept, so the executor reads the cancelled run."""
    h = harness(RUNBOOK)
    recorder, gated, run, first = await _recorder_on_a_started_run(h)
    runbook_step = h.service.e.runbooks["probe-thrice"].step(first.step_id)
    event = recorder.event(run, "step.finished", step=runbook_step)
    saving = asyncio.create_task(
        recorder.save(replace(first, status=StepStatus.SUCCEEDED), event=event)
    )
    await gated.committed.get()  # the step's transaction has committed; the write is in flight
    await recorder.set_run(run, RunStatus.CANCELLED, "cancelled by U2")
    gated.gate.set()
    await saving
    assert recorder.take_view(run.id) is None


async def test_a_step_write_alone_keeps_its_view_once(harness: MakeHarness) -> None:
    """A step's last record, with nothing else writing to the run: its view is the run as a
    read would find it, and it is handed out once."""
    h = harness(RUNBOOK)
    recorder, gated, run, first = await _recorder_on_a_started_run(h)
    gated.gate.set()
    runbook_step = h.service.e.runbooks["probe-thrice"].step(first.step_id)
    event = recorder.event(run, "step.finished", step=runbook_step)
    done = replace(first, status=StepStatus.SUCCEEDED)
    await recorder.save(done, event=event)
    view = recorder.take_view(run.id)
    assert view is not None
    assert view == await h.store.run_state(run.id)
    assert view.steps[0] == done
    assert recorder.take_view(run.id) is None  # taken once


async def test_overlapping_step_writes_keep_no_view(harness: MakeHarness) -> None:
    """Two writes to one run in flight at once (possible on PostgreSQL): neither view is
    known to hold the other's write, so neither is kept."""
    h = harness(RUNBOOK)
    recorder, gated, run, first = await _recorder_on_a_started_run(h)
    runbook_step = h.service.e.runbooks["probe-thrice"].step(first.step_id)
    event = recorder.event(run, "step.finished", step=runbook_step)
    one = asyncio.create_task(
        recorder.save(replace(first, status=StepStatus.SUCCEEDED), event=event)
    )
    await gated.committed.get()
    two = asyncio.create_task(
        recorder.save(replace(first, status=StepStatus.SUCCEEDED, attempts=2), event=event)
    )
    await gated.committed.get()
    gated.gate.set()
    await asyncio.gather(one, two)
    assert recorder.take_view(run.id) is None
