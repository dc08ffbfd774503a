"""The blast-radius caps: cordon slots, the drain check, held steps and what wakes them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel

from gpubot.actions.base import ActionSpec
from gpubot.domain import messages
from gpubot.domain.control.safety_caps import (
    BlastRadius,
    check_cordon,
    check_drain,
    check_pool_cordon,
    check_pool_drain,
)
from gpubot.domain.fleet.cluster import FleetView
from gpubot.domain.runbooks.runs import Run, RunStatus, StepState, StepStatus
from gpubot.domain.runbooks.spec import Step
from gpubot.engine.chat import best_effort
from gpubot.engine.deps import Engine
from gpubot.engine.recorder import RunRecorder
from gpubot.errors import GpubotError
from gpubot.ports import NodeOps, SharedCaps

log = logging.getLogger(__name__)

# How long a cordon gpubot made is counted by itself after it returned, when the fleet view
# does not show it: longer than any view may lag (the adapter lists instead of serving a
# view more than 30 s old), so the cordon is counted by one or the other the whole time.
SETTLE = timedelta(seconds=60)


class CordonSlots:
    """The cordon cap for one cluster, exact while cordons of different nodes run at once.

    A slot is reserved under a lock that covers only the count (the fleet view is read from
    the adapter's watch cache, in memory), never the API call, so a storm's cordons go out
    concurrently. What is counted: the GPU nodes the view shows cordoned, the cordons in
    flight here, and the cordons made here that the view may not show yet (kept for SETTLE
    after they returned, or until the view shows them). So the cap is never passed for
    lack of a fresher view.

    Across HA replicas: only the replica holding the Lease starts steps (the executor asks
    before every step and attempt), so one process reserves at a time, and its successor's
    view comes from the API server, where every finished cordon is. A cordon the old leader
    (or this process before a restart) sent may still be landing: each is recorded RUNNING
    in the store before its PATCH goes out, so on becoming the leader the gate adopts
    those nodes (`adopt`), counted like a cordon made here until the view shows them or
    SETTLE has passed.
    """

    def __init__(
        self,
        *,
        settle: timedelta = SETTLE,
        shared: SharedCaps | None = None,
        cluster: str = "",
        holder: str = "",
    ) -> None:
        self._lock = asyncio.Lock()
        # Replicas executing side by side (shards): the cordons the others have in flight or
        # just made count too, read and reserved under one lock all of them take.
        self._shared, self._cluster, self._holder = shared, cluster, holder
        self._settle = settle
        self._flight: dict[str, int] = {}  # node → cordons of it in flight
        self._seen: dict[str, int] = {}  # node → view.cordon_seen when its slot was reserved
        self._made: dict[str, datetime] = {}  # node → when gpubot's cordon of it returned
        # Nodes whose cordon returned success here (not adopted, not failed): the API server
        # has it, so a later uncached read that shows the node schedulable means it was undone.
        self._landed: set[str] = set()
        self.released = 0  # reservations dropped without the view showing the node cordoned

    async def take(
        self,
        *,
        nodes: NodeOps,
        policy: BlastRadius,
        node: str,
        now: datetime,
        pool: PoolCap | None = None,
    ) -> str | None:
        """Reserve a slot for cordoning `node`; or why the cap holds it (nothing reserved).
        With `pool`, the node's pool's own cap must allow it too, counted over its nodes."""
        async with self._lock:
            view = await nodes.gpu_fleet()
            self.expire(view, now=now)
            reason = await self._decide(view, policy=policy, node=node, pool=pool, now=now)
            if reason is not None and await self._drop_undone(nodes, view):
                reason = await self._decide(view, policy=policy, node=node, pool=pool, now=now)
            if reason is None:
                self._flight[node] = self._flight.get(node, 0) + 1
                self._seen.setdefault(node, view.cordon_seen.get(node, 0))
            return reason

    async def _decide(
        self,
        view: FleetView,
        *,
        policy: BlastRadius,
        node: str,
        pool: PoolCap | None,
        now: datetime,
    ) -> str | None:
        """Why the cap holds `node`, or None; with replicas side by side, a None has reserved
        the slot where they all count it."""
        members: set[str] = set()
        if pool is not None:
            counted = set(view.cordoned) | self._flight.keys() | self._made.keys()
            members = await pool.members(view.gpu_nodes | counted) | {node}

        def check(others: set[str]) -> str | None:
            return self._check(
                view, policy=policy, node=node, pool=pool, members=members, others=others
            )

        if self._shared is None:
            return check(set())
        return await self._shared.reserve_cordon(
            cluster=self._cluster,
            node=node,
            holder=self._holder,
            now=now,
            settle=self._settle,
            decide=check,
        )

    def _check(
        self,
        view: FleetView,
        *,
        policy: BlastRadius,
        node: str,
        pool: PoolCap | None,
        members: set[str],
        others: set[str],
    ) -> str | None:
        """Across the fleet, then (when the node's pool has a cap) within its pool. `others`:
        the cordons other replicas have in flight or just made."""
        counted = set(view.cordoned) | self._flight.keys() | self._made.keys() | others
        reason = check_cordon(policy=policy, fleet_size=view.size, cordoned=counted, node=node)
        if reason is not None or pool is None:
            return reason
        return check_pool_cordon(
            pool=pool.name,
            policy=pool.cap,
            pool_size=len(members & view.gpu_nodes | {node}),
            cordoned=counted & members,
            node=node,
        )

    async def adopt(self, *, nodes: NodeOps, node: str, now: datetime) -> None:
        """Count a cordon of `node` sent by another process (its step recorded RUNNING), as
        if made here just now: until the view shows it, or for SETTLE."""
        async with self._lock:
            view = await nodes.gpu_fleet()
            if node in view.cordoned:
                return
            self._seen.setdefault(node, view.cordon_seen.get(node, 0))
            self._made[node] = now

    def expire(self, view: FleetView, *, now: datetime) -> None:
        """Stop counting cordons made here once `view` has seen them (the node cordoned now,
        or seen becoming cordoned since the slot was reserved: from then on the view's own
        set decides), or after SETTLE without that (the cordon never landed)."""
        for name, at in list(self._made.items()):
            seen = view.cordon_seen.get(name, 0) > self._seen.get(name, 0)
            if name in view.cordoned or seen or now - at > self._settle:
                del self._made[name]
                self._landed.discard(name)
                if name not in self._flight:
                    self._seen.pop(name, None)
                if name not in view.cordoned:
                    self.released += 1  # its slot is free again

    async def _drop_undone(self, nodes: NodeOps, view: FleetView) -> bool:
        """Only when the cap would hold a cordon: ask the API server (an uncached read, after
        the cordon returned) about each node counted as made here that the view does not
        show cordoned. One that is schedulable had its cordon undone (a person's `kubectl
        uncordon` before any view saw it): its slot is free. Only cordons that returned
        success here are asked about: an adopted or failed one may still be landing.
        Whether any was dropped."""
        dropped = False
        unseen = [n for n in self._landed if n not in view.cordoned and n not in self._flight]
        for name in sorted(unseen):
            try:
                info = await nodes.get_node(node=name)
            except GpubotError:
                continue  # unread: it stays counted until the view or SETTLE decides
            if not info.unschedulable:
                self._made.pop(name, None)
                self._landed.discard(name)
                self._seen.pop(name, None)
                self.released += 1
                dropped = True
        return dropped

    def landed(self, node: str) -> None:
        """The cordon call of `node` returned success: the API server has it."""
        self._landed.add(node)

    def done(self, node: str, *, now: datetime) -> None:
        """The cordon call returned (or failed: it may still have landed, so it counts)."""
        left = self._flight.get(node, 0) - 1
        if left > 0:
            self._flight[node] = left
        else:
            self._flight.pop(node, None)
        self._made[node] = now

    def in_flight(self) -> int:
        return sum(self._flight.values())

    async def done_shared(self, node: str, *, now: datetime) -> None:
        """Tell the other replicas the cordon of `node` returned, so they count it only for
        SETTLE more. Unsaid (the store away), they count it as in flight a while longer."""
        if self._shared is None:
            return
        try:
            await self._shared.cordon_returned(
                cluster=self._cluster, node=node, holder=self._holder, now=now
            )
        except Exception as exc:  # counted longer by the others: the safe side
            log.warning("cordon of %s: could not record its return for the replicas: %s", node, exc)


@dataclass(frozen=True)
class PoolCap:
    """A pool's own blast-radius cap, and which of some nodes are in that pool now."""

    name: str
    cap: BlastRadius
    members: Callable[[Collection[str]], Awaitable[set[str]]]


async def pool_cap(e: Engine, cluster: str, node: str) -> PoolCap | None:
    """The cap of `node`'s pool, when that pool sets one (None otherwise, or unread)."""
    if not e.policy.pool_blast or cluster not in e.clusters:
        return None
    nodes = e.clusters[cluster].nodes
    name = await _pool_of(e, nodes, cluster, node)
    cap = e.policy.pool_blast.get(name or "")
    if name is None or cap is None:
        return None

    async def members(names: Collection[str]) -> set[str]:
        return {n for n in names if await _pool_of(e, nodes, cluster, n) == name}

    return PoolCap(name, cap, members)


async def _pool_of(e: Engine, nodes: NodeOps, cluster: str, node: str) -> str | None:
    """The pool `node` is in now, from its labels (the watch cache); None when unread."""
    try:
        info = await nodes.get_node(node=node, cached=True)
    except GpubotError:
        return None
    return e.policy.pool_for(cluster=cluster, labels=info.labels).pool.name


def gated_node(spec: ActionSpec[Any], params: BaseModel) -> str | None:
    """The node a blast-radius cap counts this step against; None when no cap applies."""
    node = getattr(params, "node", None)
    return node if spec.blast is not None and isinstance(node, str) else None


async def cordons_in_flight(e: Engine) -> list[tuple[str, str]]:
    """(cluster, node) of every cordon step recorded RUNNING in the store: its PATCH may be
    on its way (recorded before it is sent), from whichever process last led."""
    found: list[tuple[str, str]] = []
    active = [RunStatus.RUNNING, RunStatus.WAITING_APPROVAL, RunStatus.HELD, RunStatus.NEEDS_HUMAN]
    for run in await e.store.list_runs(statuses=active):
        runbook = e.runbooks.get(run.runbook)
        if runbook is None or run.cluster not in e.clusters:
            continue  # a runbook no longer loaded, a cluster no longer configured
        for s in await e.store.steps(run.id):
            if s.status is not StepStatus.RUNNING:
                continue
            try:
                blast = e.registry.get(runbook.step(s.step_id).action).blast
            except (KeyError, GpubotError):
                continue
            node = s.args.get("node", run.target)
            if blast == "cordon" and isinstance(node, str) and node:
                found.append((run.cluster, node))
    return found


async def drain_hold_reason(e: Engine, run: Run, node: str) -> str | None:
    """Why a drain of `node` must wait for drains in progress, or None."""
    draining: set[str] = set()
    # Any unfinished run: a drain is recorded RUNNING before its run's own status catches up.
    active = [RunStatus.RUNNING, RunStatus.WAITING_APPROVAL, RunStatus.HELD, RunStatus.NEEDS_HUMAN]
    for other in await e.store.list_runs(statuses=active):
        if other.id == run.id:
            continue
        for s in await e.store.steps(other.id):
            action = e.runbooks[other.runbook].step(s.step_id).action
            if s.status is StepStatus.RUNNING and e.registry.get(action).blast == "drain":
                draining.add(str(s.args.get("node", other.target)))
    reason = check_drain(policy=e.policy.blast, draining=draining, node=node)
    if reason is not None or (pool := await pool_cap(e, run.cluster, node)) is None:
        return reason
    within = await pool.members(draining)
    return check_pool_drain(pool=pool.name, policy=pool.cap, draining=within, node=node)


# Cordons: (slots the fleet view saw freed, reservations dropped); drains: (drains and runs
# ended here, 0). A held step is re-checked only once its key has changed.
WakeKey = tuple[int, int]


@dataclass(frozen=True)
class HeldStep:
    run_id: str
    incident_id: str | None
    cluster: str
    runbook: str
    step: str
    node: str
    blast: str  # "cordon" | "drain": what frees its slot
    reason: str
    key: WakeKey  # what the world looked like when it was held


class Holds:
    """Steps the blast-radius cap holds. A held step is re-checked only once something that
    can free a slot has changed since it was held (its wake key), never on a timer alone."""

    def __init__(self) -> None:
        self._held: dict[str, HeldStep] = {}
        self.changes = 0  # bumped whenever the set of held steps or their reasons change

    def hold(self, held: HeldStep) -> None:
        before = self._held.get(held.run_id)
        self._held[held.run_id] = held
        if before is None or before.reason != held.reason:
            self.changes += 1

    def clear(self, run_id: str) -> None:
        if self._held.pop(run_id, None) is not None:
            self.changes += 1

    def get(self, run_id: str) -> HeldStep | None:
        return self._held.get(run_id)

    def clusters(self) -> set[str]:
        return {h.cluster for h in self._held.values()}

    def held(self) -> list[HeldStep]:
        return sorted(self._held.values(), key=lambda h: (h.cluster, h.node, h.run_id))

    def __len__(self) -> int:
        return len(self._held)


class BlastRadiusGate:
    """The caps as this process applies them to a step that counts against one: a cordon
    reserves a slot of its cluster's fleet (CordonSlots) and runs outside any lock; a drain
    checks that no other drain runs and marks itself RUNNING under one lock. A step the cap
    holds is recorded, listed in the one storm summary, and re-checked only once its wake
    key has changed."""

    def __init__(self, engine: Engine) -> None:
        self.e = engine
        self.record = RunRecorder(engine)
        self._drain_lock = asyncio.Lock()
        self._slots: dict[str, CordonSlots] = {}  # by cluster
        self.holds = Holds()
        self._ended = 0  # runs and drain steps that ended here: each may free a slot
        # Called when something in this process may have freed a slot (the service wakes
        # the held runs); an uncordon seen by the fleet view is noticed on the next tick.
        self.on_release: Callable[[], None] | None = None

    @contextlib.asynccontextmanager
    async def admit(
        self, run: Run, step: Step, spec: ActionSpec[Any], state: StepState, params: BaseModel
    ) -> AsyncIterator[StepState | None]:
        """Whether the step may run now: the state to run it from, or None when the cap holds
        it (recorded, and in the storm summary). A cordon keeps its slot, and a drain counts
        as running here, until the block ends."""
        node = gated_node(spec, params)
        if node is None:
            yield state
            return
        # Read before the check, so that a slot freed after the check wakes the step.
        key = await self.wake_key(run.cluster, spec.blast or "")
        if spec.blast == "cordon":
            # A slot is reserved atomically, then the cordon runs outside any lock, so the
            # cordons of a storm go out side by side and the cap stays exact (CordonSlots).
            slots = self._slots_of(run.cluster)
            nodes = self.e.clusters[run.cluster].nodes
            now = self.e.clock.now()
            pool = await pool_cap(self.e, run.cluster, node)
            if hold := await slots.take(
                nodes=nodes, policy=self.e.policy.blast, node=node, now=now, pool=pool
            ):
                await self._hold(run, step, state, hold, node=node, blast="cordon", key=key)
                yield None
                return
            await self.unhold(run.id)
            try:
                yield state
            finally:
                slots.done(node, now=self.e.clock.now())
                await slots.done_shared(node, now=self.e.clock.now())
            return
        # Check and mark as one: without the lock, two runs could each see no drain going on
        # and both start one. A drain holds it until recorded RUNNING, which the next counts.
        # Replicas executing side by side take one lock in the store too.
        shared = self.e.shared_caps
        async with (
            self._drain_lock,
            shared.exclusive("drain") if shared is not None else contextlib.nullcontext(),
        ):
            hold = await drain_hold_reason(self.e, run, node)
            if hold:
                await self._hold(run, step, state, hold, node=node, blast="drain", key=key)
            else:
                await self.unhold(run.id)
                now = self.e.clock.now()
                state = replace(
                    state, status=StepStatus.RUNNING, started_at=state.started_at or now
                )
                await self.record.save(state)
        if hold:
            yield None
            return
        try:
            yield state
        finally:
            self.released()

    def returned(self, run: Run, spec: ActionSpec[Any], params: BaseModel) -> None:
        """The step's action returned success: for a cordon, the API server has it."""
        node = gated_node(spec, params)
        if node is not None and spec.blast == "cordon" and run.cluster in self._slots:
            self._slots[run.cluster].landed(node)

    def released(self) -> None:
        """A run or a drain ended here: held steps may go now."""
        self._ended += 1
        if self.on_release is not None:
            self.on_release()  # held steps, and runs deferred behind the run that ended

    async def wake_key(self, cluster: str, blast: str) -> WakeKey:
        """What a held step waits on to change: cheap (the fleet view is cached). A cordon
        waits for a slot of the fleet (a node back in service, a reservation dropped), a
        drain for a drain or run here to end."""
        if blast != "cordon":
            return (self._ended, 0)
        view = await self.e.clusters[cluster].nodes.gpu_fleet()
        slots = self._slots.get(cluster)
        if slots is not None:
            slots.expire(view, now=self.e.clock.now())
        return (view.released, slots.released if slots else 0)

    async def adopt_cordons_in_flight(self) -> int:
        """On becoming the leader (or starting): count the cordons another process may still
        have landing against the cap (CordonSlots.adopt); how many were adopted."""
        found = await cordons_in_flight(self.e)
        for cluster, node in found:
            slots = self._slots_of(cluster)
            nodes = self.e.clusters[cluster].nodes
            await slots.adopt(nodes=nodes, node=node, now=self.e.clock.now())
        return len(found)

    def _slots_of(self, cluster: str) -> CordonSlots:
        if cluster not in self._slots:
            self._slots[cluster] = CordonSlots(
                shared=self.e.shared_caps, cluster=cluster, holder=self.e.identity
            )
        return self._slots[cluster]

    async def due(self, run: Run) -> bool:
        """Whether a HELD run is worth re-checking now: not held here (held by another
        replica, or before a restart), or what it waits on has changed since."""
        held = self.holds.get(run.id)
        return held is None or held.key != await self.wake_key(run.cluster, held.blast)

    async def unhold(self, run_id: str) -> None:
        before = self.holds.changes
        self.holds.clear(run_id)
        if self.holds.changes != before:
            await self._post_holds()

    async def _hold(
        self,
        run: Run,
        step: Step,
        state: StepState,
        reason: str,
        *,
        node: str,
        blast: str,
        key: WakeKey,
    ) -> None:
        """Held by the cap: recorded on the run, and told in the one storm summary."""
        await self.record.hold(run, step, state, reason)
        before = self.holds.changes
        held = HeldStep(
            run_id=run.id,
            incident_id=run.incident_id,
            cluster=run.cluster,
            runbook=run.runbook,
            step=step.id,
            node=node,
            blast=blast,
            reason=reason,
            key=key,
        )
        self.holds.hold(held)
        if self.holds.changes != before:
            await self._post_holds()

    async def _post_holds(self) -> None:
        message = messages.held_summary(
            [
                (h.node, f"{h.runbook} > {h.step}", h.incident_id or "-", h.reason)
                for h in self.holds.held()
            ],
            cap=self.e.policy.blast,
        )
        # Each run's note and the audit trail say it too.
        await best_effort(
            self.e.notifier.post_summary(key="blast-radius", message=message),
            "post the summary of held steps",
        )
