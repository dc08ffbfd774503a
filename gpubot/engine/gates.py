"""Gates that hold a step: a resolved incident, and the blast-radius caps."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel

from gpubot.actions.base import ActionSpec
from gpubot.domain.cluster import FleetView
from gpubot.domain.policy import BlastRadius, check_cordon, check_drain
from gpubot.domain.runbooks import Runbook
from gpubot.domain.runs import Run, RunStatus, StepStatus
from gpubot.engine.deps import Engine
from gpubot.errors import GpubotError
from gpubot.ports import NodeOps

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
    in the store before its PATCH goes out, so on becoming the leader the executor adopts
    those nodes (`adopt`), counted like a cordon made here until the view shows them or
    SETTLE has passed.
    """

    def __init__(self, *, settle: timedelta = SETTLE) -> None:
        self._lock = asyncio.Lock()
        self._settle = settle
        self._flight: dict[str, int] = {}  # node → cordons of it in flight
        self._seen: dict[str, int] = {}  # node → view.cordon_seen when its slot was reserved
        self._made: dict[str, datetime] = {}  # node → when gpubot's cordon of it returned
        self.released = 0  # reservations dropped without the view showing the node cordoned

    async def take(
        self, *, nodes: NodeOps, policy: BlastRadius, node: str, now: datetime
    ) -> str | None:
        """Reserve a slot for cordoning `node`; or why the cap holds it (nothing reserved)."""
        async with self._lock:
            view = await nodes.gpu_fleet()
            self.expire(view, now=now)
            counted = set(view.cordoned) | self._flight.keys() | self._made.keys()
            reason = check_cordon(policy=policy, fleet_size=view.size, cordoned=counted, node=node)
            if reason is None:
                self._flight[node] = self._flight.get(node, 0) + 1
                self._seen.setdefault(node, view.cordon_seen.get(node, 0))
            return reason

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
                if name not in self._flight:
                    self._seen.pop(name, None)
                if name not in view.cordoned:
                    self.released += 1  # its slot is free again

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


async def stale_reason(e: Engine, run: Run, runbook: Runbook) -> str | None:
    """An alert that resolved (or was replayed after recovery) must not drive a mutation."""
    if run.incident_id is None or runbook.on_resolve == "continue":
        return None
    incident = await e.store.get_incident(run.incident_id)
    if incident.is_open:
        return None
    return f"incident {incident.id} resolved before the remaining steps ran; nothing more done"


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
    return check_drain(policy=e.policy.blast, draining=draining, node=node)
