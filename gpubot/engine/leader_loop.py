"""What the service does between requests: fill the node caches at start, finish what a
crash interrupted, and on the leader tick, follow the audit trail for other replicas' work,
and wake held and deferred runs.

The service's front door (gpubot.engine.service) takes webhooks, votes and commands; this
loop is what `serve` drives on a timer and at start and what the leader alone acts on.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from asyncio import FIRST_COMPLETED
from typing import TYPE_CHECKING

from gpubot.domain.control.audit import AuditTrailError
from gpubot.domain.control.pools import policy_changes
from gpubot.domain.incidents.correlation import Incident, IncidentStatus
from gpubot.domain.runbooks.runs import RunStatus
from gpubot.domain.runbooks.shards import run_key
from gpubot.engine.interventions import CANCELLED_KIND, RESUMED_KIND, Interventions
from gpubot.engine.signed_votes import SUBMITTED_KIND
from gpubot.knowledge.xid.catalog import catalog

if TYPE_CHECKING:
    from gpubot.engine.service import GpubotService
    from gpubot.ports import Clock

log = logging.getLogger(__name__)
_ACTIVE = (RunStatus.RUNNING, RunStatus.WAITING_APPROVAL, RunStatus.HELD)
# What a replica records that only the leader can act on: a run it created, a vote it took,
# a step its shutdown interrupted.
# A cancel or resume (from any process: a replica, the break-glass CLI) wakes the run too,
# and a signed vote the CLI stored is counted.
_FOR_THE_LEADER = (
    SUBMITTED_KIND,
    "run.created",
    "approval.vote",
    "step.interrupted",
    CANCELLED_KIND,
    RESUMED_KIND,
)


NEWS_GAP_SECONDS = 0.02  # after word of another process's write, the least time between looks


class LeaderLoop:
    """The service's background work (one per service: `service.background`)."""

    def __init__(self, service: GpubotService) -> None:
        self.s = service
        self.e = service.e
        self._waking = False
        self._news: asyncio.Event | None = None  # set when another process wrote to the store
        self._followed: int | None = None  # the audit seq follow() has read up to, leading
        self._term: int | None = None  # the leadership term follow() last looked at
        self.warming = False  # the clusters' node caches are filling (warm): not ready yet

    async def warm(self, *, timeout_s: float = 10.0) -> None:
        """Before the first alert: every cluster's caches filled (the node cache's first
        LIST, and on Kubernetes the GPU pod cache's), side by side, so the first alert after
        a start is as fast as the next; a cluster not ready within `timeout_s` is logged and
        reads the server until its caches fill."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        names = sorted(self.e.clusters)
        self.warming = True
        try:
            ready = await asyncio.gather(
                *(self.e.clusters[n].nodes.warm(timeout_s=timeout_s) for n in names)
            )
        finally:
            self.warming = False
        took = loop.time() - started
        catalog()  # the XID catalog, parsed once, before the first XID alert reads it
        try:
            await self.e.store.rehearse(now=self.e.clock.now())
        except Exception as exc:  # a store that cannot rehearse still serves: /readyz says why
            log.warning(
                "store: could not rehearse an alert's statements (%s); the first alert compiles "
                "them",
                str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                extra={"event": "store.rehearsal_failed"},
            )
        # What start-up made (the first LIST of every node among it) is collected once now
        # and then frozen out of the collector's sight: a full collection during the first
        # alerts walks what came since, not the whole fleet (one took 170 ms on 1,500 Nodes).
        gc.collect()
        gc.freeze()
        for name, ok in zip(names, ready, strict=True):
            if ok:
                log.info("cluster %s: caches ready (%.2fs)", name, took)
            else:
                log.warning(
                    "cluster %s: caches not filled within %.0fs; reads go to the API server "
                    "until they are",
                    name,
                    timeout_s,
                    extra={"event": "cache.cold"},
                )

    async def recover(self) -> None:
        """After a start: finish what a crash interrupted, from the store and live state."""
        unfinished = await self.e.store.list_runs(statuses=_ACTIVE)
        await self.s.gate.adopt_cordons_in_flight()  # a PATCH sent before the crash
        for run in unfinished:
            self.s.spawn(self.s.executor.advance(run.id))
        log.info(
            "recovered %d unfinished run(s) from the store",
            len(unfinished),
            extra={"event": "runs.recovered", "count": len(unfinished)},
        )
        # Before this process takes any webhook, so no intake follow-up of its own can be
        # recording the same incident's opening at the same time.
        await self._start_missing_runs(record_opened=True)
        await self.s.faults.at_start()

    async def record_policy(self) -> None:
        """At start: log the policy's digest and pools, and audit it when it is not the
        digest the trail last recorded (a changed policy is visible in the trail), saying
        what changed since that record: which pools and which fields."""
        policy = self.e.policy
        pools = ", ".join(f"{p.name} ({p.mode})" for p in policy.pools) or "none"
        log.info(
            "policy %s loaded: pools %s; other nodes %s",
            policy.digest or "-",
            pools,
            policy.default_pool.mode,
            extra={"event": "policy.loaded", "reason": policy.digest},
        )
        earlier = await self.e.store.events(kinds=["policy.loaded"])
        last = earlier[-1].result if earlier else {}
        before = str(last.get("digest", ""))
        if before == policy.digest:
            return
        changes: list[str] = []
        if before:
            document = last.get("document")
            if isinstance(document, dict) and policy.document:
                changes = policy_changes(document, policy.document)
            else:
                changes = ["(the earlier record keeps no policy document to compare with)"]
            log.warning(
                "policy changed since it was last recorded (%s -> %s): %s",
                before,
                policy.digest,
                "; ".join(changes) or "nothing that the documents show",
                extra={"event": "policy.changed", "reason": policy.digest},
            )
        try:
            await self.s.trail.record(
                "policy.loaded",
                actor="gpubot",
                result={
                    "digest": policy.digest,
                    "previous": before or None,
                    "pools": [p.as_json() for p in policy.pools],
                    "default_mode": policy.default_pool.mode,
                    "changes": changes,
                    "document": dict(policy.document),
                },
                reason=(
                    ("the policy changed since it was last recorded: " + "; ".join(changes))[:500]
                    if before
                    else "first start"
                ),
            )
        except AuditTrailError as exc:  # said already (log, /readyz); serve still starts
            log.error("policy %s not recorded: %s", policy.digest, exc)

    async def tick(self) -> None:
        """Periodic: expire approvals, wake held steps whose slot may have freed, and (on the
        leader) pick up runs that another replica recorded but may not start."""
        for run in await self.e.store.list_runs(
            statuses=(RunStatus.WAITING_APPROVAL, RunStatus.HELD, RunStatus.RUNNING)
        ):
            if self.s.executor.busy(run.id) or not self.e.leadership.leads(run_key(run)):
                continue  # advancing here, or another replica's shard
            # A held step sleeps until something it waits on changed (no LIST per tick).
            if run.status is RunStatus.HELD and not await self.s.gate.due(run):
                continue
            self.s.spawn(self.s.executor.advance(run.id))
        if self.e.leadership.is_leader():  # a vote stored while no leader was following
            await self.s.count_signed_votes()
            await self.s.pruner.maybe_prune()
        # The follow-up after intake may have failed (the database went away after the
        # alert was stored): without this, such an incident would wait for a restart.
        await self._start_missing_runs()

    def watch_store(self) -> bool:
        """From now on, know when another process writes to the store (PostgreSQL): a run a
        replica created, a vote, the CLI's cancel. `pause` then ends early, so the leader
        acts on them at once; False where the store cannot tell (the pause is then whole)."""
        loop = asyncio.get_running_loop()
        news = asyncio.Event()

        def wake() -> None:  # from the store's own thread
            loop.call_soon_threadsafe(news.set)

        if not self.e.store.watch_writes(wake):
            return False
        self._news = news
        return True

    async def pause(self, clock: Clock, seconds: float) -> None:
        """Until `seconds` have passed on `clock`, or another process wrote to the store;
        then at least NEWS_GAP_SECONDS, so a storm's writes cost at most one look per gap."""
        news = self._news
        if news is None:
            await clock.sleep(seconds)
            return
        sleeping = asyncio.ensure_future(clock.sleep(seconds))
        waiting = asyncio.ensure_future(news.wait())
        try:
            done, _ = await asyncio.wait((sleeping, waiting), return_when=FIRST_COMPLETED)
        finally:
            for task in (sleeping, waiting):
                task.cancel()
        if waiting in done:
            news.clear()
            await clock.sleep(NEWS_GAP_SECONDS)

    async def follow(self) -> None:
        """Often (every second): the leader's look at what other replicas recorded for it.

        Every replica takes webhooks, votes and commands, but only the leader (with shards:
        the holder of the run's shard) starts steps: a run created on another replica, or an
        approval clicked there, is advanced here as soon as the audit trail shows it, not at
        the next tick. Becoming the leader, or taking another shard, is a full tick at once
        (the runs the last holder left). Costs one read of the audit head when nothing
        changed, and nothing on a replica that leads nothing."""
        term = self.e.leadership.term()
        if term is None:
            self._followed = self._term = None
            return
        head = await self.e.store.head()
        seq = head.seq if head is not None else 0
        if self._followed is None or term != self._term:
            self._followed, self._term = seq, term
            # The last leader's cordons may still be landing: count them before any new one.
            await self.s.gate.adopt_cordons_in_flight()
            await self.tick()
            return
        if seq == self._followed:
            return
        events = await self.e.store.events(after_seq=self._followed, kinds=_FOR_THE_LEADER)
        self._followed = max([seq, *(e.seq for e in events)])
        if any(e.kind == SUBMITTED_KIND for e in events):
            await self.s.count_signed_votes()  # its own events wake the runs it decided
        for event in events:  # a cancel from the CLI, which tells no chat: told here
            await Interventions(self.e).tell_cancelled(event)
        for run_id in dict.fromkeys(e.run_id for e in events if e.run_id):
            if not self.s.executor.busy(run_id):
                self.s.spawn(self.s.executor.advance(run_id))

    async def start_deferred(self) -> None:
        """Start the runs deferred here whose node is free now (a run on it ended)."""
        for incident_id in sorted(self.s.deferred):
            incident = await self.e.store.get_incident(incident_id)
            if not incident.is_open or await self.e.store.list_runs(incident_id=incident_id):
                self.s.deferred.discard(incident_id)
                continue
            self.s.deferred.discard(incident_id)  # put back by start_incident_runs if still busy
            await self.s.start_incident_runs(incident, quiet=True)

    def wake_soon(self) -> None:
        """One wake at a time: a storm of ending runs costs one pass over the held ones."""
        if not self._waking:
            self._waking = True
            self.s.spawn(self.wake_held())

    async def wake_held(self) -> None:
        """Re-check the held runs whose slot may have freed (a run or drain ended here), and
        start the deferred runs whose node may be free."""
        self._waking = False  # what ends from here on asks for another pass
        if self.s.deferred:
            await self.start_deferred()
        if not len(self.s.gate.holds):
            return
        for run in await self.e.store.list_runs(statuses=(RunStatus.HELD,)):
            if not self.e.leadership.leads(run_key(run)):
                continue  # another replica's shard
            if not self.s.executor.busy(run.id) and await self.s.gate.due(run):
                self.s.spawn(self.s.executor.advance(run.id))

    async def _start_missing_runs(self, *, record_opened: bool = False) -> None:
        """Start the runs of open incidents that have none (the store's unique key on
        incident and runbook keeps a race with the intake follow-up from doubling one).
        `record_opened` (at start-up only) also records an opening the follow-up never did."""
        for incident in await self.e.store.list_incidents(status=IncidentStatus.OPEN, limit=1000):
            if not await self.e.store.list_runs(incident_id=incident.id):
                if record_opened:
                    await self._record_opened(incident)
                await self.s.start_incident_runs(incident, quiet=True)

    async def _record_opened(self, incident: Incident) -> None:
        """An incident whose intake follow-up never ran (the process died right after the
        alert was stored) still gets its `incident.opened` event and its thread, once."""
        events = await self.e.store.events(incident_id=incident.id)
        if any(e.kind == "incident.opened" for e in events):
            return
        await self.s.audit_incident(incident, "incident.opened", None)
        await self.s.notify(self.e.notifier.open_thread(incident=incident))
