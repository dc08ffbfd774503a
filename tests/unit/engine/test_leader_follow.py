"""HA replicas on one store: what a replica that does not lead records (a run, a vote) is
advanced by the leader's next follow(), a second later rather than at its next tick; a
replica that becomes the leader picks up at once what the last one left."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from leadership import Flag

from gpubot.domain.runbooks.runs import RunStatus
from gpubot.engine.service import GpubotService

MakeHarness = Any  # the `harness` fixture in conftest.py

AUTO = """
name: probe-auto
triggers: [{command: probe-auto}]
steps:
  - {id: act, action: test.probe, args: {key: auto}, approval: auto}
"""
APPROVED = """
name: probe-approved
triggers: [{command: probe-approved}]
steps:
  - {id: act, action: test.probe, args: {key: approved}, approval: required}
"""


def replica(base: GpubotService, *, leader: bool) -> tuple[GpubotService, Flag]:
    flag = Flag(leader)
    return GpubotService(replace(base.e, leadership=flag)), flag


class Counting:
    """Counts the service's full ticks and the store's event reads."""

    def __init__(self, service: GpubotService) -> None:
        self.ticks = 0
        self.reads = 0
        tick, events = service.background.tick, service.e.store.events

        async def counted_tick() -> None:
            self.ticks += 1
            await tick()

        async def counted_events(**kw: Any) -> Any:
            self.reads += 1
            return await events(**kw)

        service.background.tick = counted_tick  # type: ignore[method-assign]
        service.e.store.events = counted_events  # type: ignore[method-assign]


async def test_a_run_created_on_a_follower_is_started_by_the_leaders_next_look(
    harness: MakeHarness,
) -> None:
    h = harness(AUTO)
    leader, _ = replica(h.service, leader=True)
    follower, _ = replica(h.service, leader=False)
    await leader.background.follow()  # the first look as leader: a full tick
    await leader.wait_idle()
    counting = Counting(leader)

    await leader.background.follow()  # nothing new: the audit head only
    assert (counting.ticks, counting.reads) == (0, 0)

    _plan, run = await follower.start_command_run(
        runbook="probe-auto", args={}, requested_by="U1", cluster="sim"
    )
    assert run is not None
    await follower.wait_idle()
    assert (await h.store.get_run(run.id)).status is RunStatus.RUNNING
    assert h.probe.calls == {}  # a follower starts no step

    await leader.background.follow()
    await leader.wait_idle()
    assert (await h.store.get_run(run.id)).status is RunStatus.SUCCEEDED
    assert h.probe.calls == {"auto": 1}
    assert (counting.ticks, counting.reads) == (0, 1)  # not a tick: the new events only


async def test_an_approval_taken_by_a_follower_is_acted_on_by_the_leader(
    harness: MakeHarness,
) -> None:
    h = harness(APPROVED)
    leader, _ = replica(h.service, leader=True)
    follower, _ = replica(h.service, leader=False)
    await leader.background.follow()
    _plan, run = await leader.start_command_run(
        runbook="probe-approved", args={}, requested_by="U9", cluster="sim"
    )
    assert run is not None
    await leader.wait_idle()
    [request] = await h.store.approvals_for(run.id)
    await leader.background.follow()  # the run it created itself: nothing to do yet
    await leader.wait_idle()
    assert (await h.store.get_run(run.id)).status is RunStatus.WAITING_APPROVAL

    await follower.vote(approval_id=request.id, user="U1", decision="approve")
    await follower.wait_idle()
    assert h.probe.calls == {}

    await leader.background.follow()
    await leader.wait_idle()
    assert (await h.store.get_run(run.id)).status is RunStatus.SUCCEEDED
    assert h.probe.calls == {"approved": 1}


async def test_a_replica_that_becomes_the_leader_picks_up_at_once(
    harness: MakeHarness,
) -> None:
    h = harness(AUTO)
    heir, lease = replica(h.service, leader=False)
    old, _ = replica(h.service, leader=False)  # the old leader, gone before it acted
    _plan, run = await old.start_command_run(
        runbook="probe-auto", args={}, requested_by="U1", cluster="sim"
    )
    assert run is not None
    await old.wait_idle()
    counting = Counting(heir)
    await heir.background.follow()  # not the leader: reads nothing
    assert (counting.ticks, counting.reads) == (0, 0)

    lease.leader = True  # the Lease is won
    await heir.background.follow()
    await heir.wait_idle()
    assert counting.ticks == 1
    assert (await h.store.get_run(run.id)).status is RunStatus.SUCCEEDED
    assert h.probe.calls == {"auto": 1}

    lease.leader = False  # lost, and won again later: a full look again
    await heir.background.follow()
    lease.leader = True
    await heir.background.follow()
    assert counting.ticks == 2
