"""CordonSlots: the cordon cap stays exact while cordons run side by side on a stale view."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from gpubot.domain.control.safety_caps import BlastRadius
from gpubot.domain.fleet.cluster import FleetView, NodeInfo
from gpubot.engine.blast_radius import SETTLE, CordonSlots
from gpubot.errors import TemporaryStepError

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
NODES = [f"n{i:02d}" for i in range(10)]
CAP = BlastRadius(max_cordoned_count=3, max_cordoned_fraction=1.0)


class Fleet:
    """A fleet view that changes only when the test says (a watch that lags)."""

    def __init__(self, cordoned: set[str] | None = None) -> None:
        self.view = FleetView(
            gpu_nodes=frozenset(NODES), cordoned=frozenset(cordoned or ()), as_of=T0, live=True
        )
        self.reads = 0
        # The API server's own answer to an uncached GET: which nodes are cordoned there
        # (None: every cordon gpubot made landed and stays), or unreadable.
        self.server: set[str] | None = None
        self.unreadable = False
        self.gets = 0

    async def get_node(self, *, node: str, cached: bool = False) -> NodeInfo:
        assert not cached, "the slot check asks the API server, not a cache"
        self.gets += 1
        if self.unreadable:
            raise TemporaryStepError("the API server did not answer")
        cordoned = self.server is None or node in self.server
        return NodeInfo(name=node, unschedulable=cordoned, gpu_capacity=8)

    async def gpu_fleet(self) -> FleetView:
        self.reads += 1
        await asyncio.sleep(0)  # let the other reservations interleave
        return self.view

    def show(self, *cordoned: str) -> None:
        seen = dict(self.view.cordon_seen)
        for node in set(cordoned) - self.view.cordoned:
            seen[node] = seen.get(node, 0) + 1
        self.view = FleetView(
            gpu_nodes=self.view.gpu_nodes,
            cordoned=self.view.cordoned | set(cordoned),
            as_of=T0,
            live=True,
            cordon_seen=seen,
        )

    def uncordon(self, node: str) -> None:
        self.view = FleetView(
            gpu_nodes=self.view.gpu_nodes,
            cordoned=self.view.cordoned - {node},
            as_of=T0,
            live=True,
            cordon_seen=self.view.cordon_seen,
        )


async def take(slots: CordonSlots, fleet: Fleet, node: str, now: datetime = T0) -> str | None:
    return await slots.take(nodes=fleet, policy=CAP, node=node, now=now)  # type: ignore[arg-type]


async def test_concurrent_reservations_take_exactly_the_cap() -> None:
    slots, fleet = CordonSlots(), Fleet()
    reasons = await asyncio.gather(*(take(slots, fleet, n) for n in NODES[:8]))
    assert sum(r is None for r in reasons) == 3
    assert slots.in_flight() == 3
    held = [r for r in reasons if r is not None]
    assert all("3 of 10 GPU nodes are already cordoned; the cap is 3" in r for r in held)


async def test_cordons_made_count_until_the_view_shows_them() -> None:
    """The view has not seen the three cordons yet: a fourth is still refused."""
    slots, fleet = CordonSlots(), Fleet()
    for node in NODES[:3]:
        assert await take(slots, fleet, node) is None
        slots.done(node, now=T0)
    assert slots.in_flight() == 0
    assert await take(slots, fleet, NODES[3]) is not None
    fleet.show(*NODES[:3])  # the watch caught up: same count, from the view this time
    assert await take(slots, fleet, NODES[3], now=T0 + timedelta(seconds=1)) is not None
    assert slots.released == 0


async def test_a_cordon_undone_by_hand_before_any_view_saw_it_frees_its_slot_at_once() -> None:
    """gpubot cordoned three nodes; a person uncordoned one before the view (a LIST, or a
    watch that relisted) ever showed it cordoned. When the cap would hold the next cordon,
    the API server is asked about the counted nodes the view does not show: the undone one
    frees its slot there and then, without waiting out SETTLE."""
    slots, fleet = CordonSlots(), Fleet()
    for node in NODES[:3]:
        assert await take(slots, fleet, node) is None
        slots.landed(node)  # the PATCH returned 200
        slots.done(node, now=T0)
    fleet.server = {NODES[0], NODES[1]}  # `kubectl uncordon n02`
    assert await take(slots, fleet, NODES[3], now=T0 + timedelta(seconds=1)) is None
    assert slots.released == 1
    assert fleet.gets == 3  # the three the view did not show; none while the cap had room
    assert await take(slots, fleet, NODES[4], now=T0 + timedelta(seconds=1)) is not None


async def test_a_failed_or_adopted_cordon_is_not_asked_about_it_may_still_land() -> None:
    """A cordon whose call failed (a timeout: the PATCH may still be applied) and one adopted
    from the last leader are counted until the view shows them or SETTLE, whatever an
    uncached read says now."""
    slots, fleet = CordonSlots(), Fleet()
    fleet.server = set()
    for node in NODES[:2]:
        assert await take(slots, fleet, node) is None
        slots.done(node, now=T0)  # failed: no landed()
    await slots.adopt(nodes=fleet, node=NODES[2], now=T0)  # type: ignore[arg-type]
    assert await take(slots, fleet, NODES[3], now=T0 + timedelta(seconds=1)) is not None
    assert fleet.gets == 0
    assert slots.released == 0


async def test_a_cordon_the_view_never_shows_frees_its_slot_after_the_settle_time() -> None:
    """The view never shows it and the API server cannot be asked: counted for SETTLE
    (longer than any view may lag), then the slot is free again."""
    slots, fleet = CordonSlots(), Fleet()
    fleet.server, fleet.unreadable = set(), True
    for node in NODES[:3]:
        assert await take(slots, fleet, node) is None
        slots.done(node, now=T0)
    later = T0 + SETTLE - timedelta(seconds=1)
    assert await take(slots, fleet, NODES[3], now=later) is not None
    assert slots.released == 0
    assert await take(slots, fleet, NODES[3], now=T0 + SETTLE + timedelta(seconds=1)) is None
    assert slots.released == 3


async def test_a_node_already_cordoned_needs_no_slot() -> None:
    slots, fleet = CordonSlots(), Fleet(cordoned=set(NODES[:3]))
    assert await take(slots, fleet, NODES[0]) is None
    assert await take(slots, fleet, NODES[5]) is not None


async def test_a_cordon_the_view_saw_and_saw_undone_frees_its_slot_at_once() -> None:
    """Cordoned by gpubot, seen by the watch, uncordoned by a person before the next check:
    the view has seen it both ways, so its own count decides, with no wait."""
    slots, fleet = CordonSlots(), Fleet()
    for node in NODES[:3]:
        assert await take(slots, fleet, node) is None
        slots.done(node, now=T0)
    fleet.show(NODES[0])
    fleet.uncordon(NODES[0])
    assert await take(slots, fleet, NODES[3], now=T0 + timedelta(seconds=1)) is None
    assert slots.released == 1
