"""Execution spread over replicas: the runs' nodes fall into shards, each on a Lease of its own.

Every replica renews a member Lease of its own, so each knows how many replicas are alive.
Each takes free or expired shard Leases up to its fair share (the shards divided by the live
members, rounded up) and gives back any above it, so a new replica gets work at once and the
shards of one that died move to the others once their Leases expire. A shard's runs are
advanced only by the replica whose renewal of that shard's Lease landed within the lease
duration (judged as LeaseLeadership judges it), so no two replicas run a shard's steps at once.

One more Lease, the leader's, keeps the duties that one replica does for all: the scheduled
report, pruning, counting votes the CLI stored. It also says which setting executes while
replicas of two settings run side by side (a rolling update that turns shards on or off, or
changes their number): a replica takes shards only while the leader's Lease is held by a live
replica with its own number of shards, and no shard Lease of another number is still fresh;
an unsharded replica takes the leader's Lease only once no shard Lease is fresh
(`ShardLeases`). So the two settings never execute at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from gpubot.backends.kube.lease import LeaseLeadership
from gpubot.clock import SystemClock
from gpubot.domain.runbooks.shards import shard_of
from gpubot.ports import Clock

log = logging.getLogger(__name__)
GROUP_LABEL = "gpubot.io/lease-group"
# Rounds a shard above the fair share is kept while a step of it runs here, at most.
HANDOVER_ROUNDS = 12
ROLE_LABEL = "gpubot.io/lease-role"
SHARDS_LABEL = "gpubot.io/shards"  # on member and shard Leases: the replica's shard count


def member_lease_name(group: str, identity: str) -> str:
    """A Lease name for a replica's identity: a DNS label of the identity's safe characters and
    a hash of the whole identity, so two identities never share one."""
    slug = re.sub(r"[^a-z0-9-]+", "-", identity.lower()).strip("-")[:30].strip("-") or "x"
    digest = hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{group}-member-{slug}-{digest}"


class ShardedLeadership:
    """The Leadership port over `shards` shard Leases, a member Lease per replica and the
    leader's Lease."""

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        identity: str,
        shards: int,
        namespace: str = "gpubot",
        name: str = "gpubot-leader",
        lease_seconds: float = 15.0,
        renew_seconds: float = 5.0,
        clock: Clock | None = None,
        forget_after: float | None = None,
    ) -> None:
        """`forget_after`: a member Lease of another replica unchanged this long (by this
        replica's clock) is deleted: that replica is gone (default: 10 lease durations,
        at least 5 minutes)."""
        if shards < 2:
            raise ValueError("ShardedLeadership needs at least 2 shards")
        self.api = client.CoordinationV1Api(api_client)
        self.identity, self.namespace, self.name = identity, namespace, name
        self.lease_seconds, self.renew_seconds = lease_seconds, renew_seconds
        self._clock: Clock = clock or SystemClock()
        self.forget_after = forget_after or max(10 * lease_seconds, 300.0)

        def lease(lease_name: str, role: str) -> LeaseLeadership:
            labels = {GROUP_LABEL: name, ROLE_LABEL: role}
            if role != "leader":
                labels[SHARDS_LABEL] = str(shards)
            return LeaseLeadership(
                api_client,
                identity=identity,
                namespace=namespace,
                name=lease_name,
                lease_seconds=lease_seconds,
                renew_seconds=renew_seconds,
                clock=self._clock,
                labels=labels,
            )

        self.leader = lease(name, "leader")
        # The count is in the name: replicas set to another count use other Leases.
        self.shards = [lease(f"{name}-shard-{i}-of-{shards}", "shard") for i in range(shards)]
        self.member = lease(member_lease_name(name, identity), "member")
        self._members: dict[str, tuple[str, float]] = {}  # name → (resourceVersion, first seen)
        self._live: dict[str, str] = {}  # identity of a live member → its shard count
        self.blocked: str | None = None  # why this replica executes nothing now
        self._epoch = 0  # bumped each time this replica gains a shard
        self._task: asyncio.Task[None] | None = None
        # Whether a step of the shard is running here now (set by the service): a shard
        # above the fair share is given back once none is, or after HANDOVER_ROUNDS rounds,
        # so that a rebalance rarely interrupts a step.
        self.busy: Callable[[int], bool] = lambda shard: False
        self._waited: dict[int, int] = {}  # shard → rounds its handover has waited

    # -- the Leadership port ----------------------------------------------------------------

    def is_leader(self) -> bool:
        return self.leader.is_leader()

    def leads(self, key: str) -> bool:
        return self.shards[shard_of(key, len(self.shards))].is_leader()

    def term(self) -> int | None:
        return self._epoch if self.held() else None

    # -- what it holds ----------------------------------------------------------------------

    def held(self) -> list[int]:
        """The shards this replica leads now."""
        return [i for i, lease in enumerate(self.shards) if lease.is_leader()]

    def fair_share(self, members: int) -> int:
        return math.ceil(len(self.shards) / max(1, members))

    # -- the rounds -------------------------------------------------------------------------

    async def start(self) -> None:
        if self._task is None:
            # The member Lease first: whoever sees this replica holding the leader's Lease
            # also sees that it is a member, set to this shard count.
            await self.member.try_acquire_or_renew()
            await self.leader.start()
            await self.round()
            self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        """Stop renewing and give every Lease back, so the other replicas take its shards at
        once rather than after the lease duration."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for lease in self.shards:
            if lease.is_leader():
                await lease.release()
        await self.leader.stop()
        await self.member.release()

    async def _loop(self) -> None:
        while True:
            await self._clock.sleep(self.renew_seconds)
            await self.round()

    async def round(self) -> None:
        """Renew this replica's member Lease, then, from one LIST of the group's Leases, count
        the live members and renew, give back or take shards so this replica holds its fair
        share. Costs one LIST and a write per Lease held or taken, whatever the shard count."""
        await self.member.try_acquire_or_renew()
        try:
            listed = await asyncio.to_thread(
                self.api.list_namespaced_lease,
                namespace=self.namespace,
                label_selector=f"{GROUP_LABEL}={self.name}",
            )
        except (ApiException, HTTPError) as exc:
            log.warning("leases of %s: %s", self.name, exc)
            for lease in self.shards:  # renew what is held (each read on its own); take none
                if lease.is_leader():
                    await lease.try_acquire_or_renew(take=False)
            return
        found: dict[str, client.V1Lease] = {}
        for item in listed.items:
            if item.metadata is not None and item.metadata.name:
                item.api_version, item.kind = "coordination.k8s.io/v1", "Lease"
                found[str(item.metadata.name)] = item
        members = self.live_members(list(found.values()))
        for name, version in self.gone_members():
            await self._forget(name, version)
        if await self._stand_aside(found):
            return
        fair = self.fair_share(members)
        # Above the fair share, the shards with no step running here go back first.
        held = sorted(self.held(), key=lambda i: (not self.busy(i), i))
        kept: list[int] = []
        for i in held[fair:]:
            waited = self._waited.get(i, 0)
            if self.busy(i) and waited < HANDOVER_ROUNDS:
                self._waited[i] = waited + 1  # a step of it runs here: next round
                kept.append(i)
                continue
            self._waited.pop(i, None)
            await self.shards[i].release()
            log.info(
                "shard %d given back (%d replica(s): %d shards each at most)",
                i,
                members,
                fair,
                extra={"event": "shard.released"},
            )
        for i in set(self._waited) - set(kept):
            del self._waited[i]
        count = min(len(held), fair) + len(kept)
        # Shards are looked at from a different start in each replica, so that replicas
        # starting together reach for different ones.
        first = int(hashlib.sha256(self.identity.encode()).hexdigest(), 16) % len(self.shards)
        for step in range(len(self.shards)):
            i = (first + step) % len(self.shards)
            lease = self.shards[i]
            if i in held[fair:] and i not in kept:
                continue
            had = lease.is_leader()
            seen = found.get(lease.name)
            if not had and count >= fair:
                await lease.try_acquire_or_renew(take=False, seen=seen)  # observed only
                continue
            if await lease.try_acquire_or_renew(take=True, seen=seen) and not had:
                count += 1
                self._epoch += 1
                log.info(
                    "shard %d taken (%d of %d here)",
                    i,
                    count,
                    fair,
                    extra={"event": "shard.taken"},
                )

    async def _stand_aside(self, found: dict[str, client.V1Lease]) -> bool:
        """While replicas of another setting may still execute, hold no shard (give back any
        held, take none; the shard Leases are still observed). Whether it stood aside."""
        reason = self._other_setting(found)
        if reason != self.blocked:
            if reason:
                log.warning("executing nothing: %s", reason, extra={"event": "shards.stand_aside"})
            else:
                log.info("shards: the other setting is gone; taking a fair share")
            self.blocked = reason
        if reason is None:
            return False
        for i in self.held():
            await self.shards[i].release()
        for lease in self.shards:
            await lease.try_acquire_or_renew(take=False, seen=found.get(lease.name))
        return True

    def _other_setting(self, found: dict[str, client.V1Lease]) -> str | None:
        """Why replicas set otherwise may be executing, or None."""
        now = self._clock.now()
        # Labelled only when a sharded replica created it: else as the leader's rounds read it.
        leader = found.get(self.name) or self.leader.last_seen
        holder = leader.spec.holder_identity if leader and leader.spec else None
        mine = str(len(self.shards))
        if (
            holder
            and holder != self.identity
            and fresh(leader, now=now)
            and (self._live.get(holder) != mine)
        ):
            return (
                f"the leader's Lease {self.name} is held by {holder}, a replica not set "
                f"to {len(self.shards)} shards"
            )
        others = [
            name
            for name, lease in found.items()
            if _labels(lease).get(ROLE_LABEL) == "shard"
            and _labels(lease).get(SHARDS_LABEL) != str(len(self.shards))
            and fresh(lease, now=now)
        ]
        if others:
            return (
                f"shard Leases of another shard count are still held: {', '.join(sorted(others))}"
            )
        return None

    def live_members(self, leases: list[client.V1Lease]) -> int:
        """How many replicas renewed their member Lease within the lease duration, as this
        replica observed it (a member Lease first seen counts as alive). At least 1: this one."""
        now = self._clock.monotonic()
        seen: dict[str, tuple[str, float]] = {}
        alive = 0
        self._live = {self.identity: str(len(self.shards))}
        for item in leases:
            meta, spec = item.metadata, item.spec
            labels = (meta.labels or {}) if meta is not None else {}
            if labels.get(ROLE_LABEL) != "member":
                continue
            if meta is None or spec is None or not meta.name:
                continue
            name, version = str(meta.name), str(meta.resource_version)
            earlier = self._members.get(name)
            seen[name] = earlier if earlier and earlier[0] == version else (version, now)
            duration = float(spec.lease_duration_seconds or self.lease_seconds)
            if name == self.member.name or (
                spec.holder_identity and now - seen[name][1] < duration
            ):
                alive += 1
                if spec.holder_identity:
                    self._live[str(spec.holder_identity)] = _labels(item).get(SHARDS_LABEL, "")
        self._members = seen
        return max(1, alive)

    def gone_members(self) -> list[tuple[str, str]]:
        """(name, resourceVersion) of the other replicas' member Leases unchanged for
        `forget_after`, as last listed."""
        now = self._clock.monotonic()
        return [
            (name, version)
            for name, (version, since) in sorted(self._members.items())
            if name != self.member.name and now - since >= self.forget_after
        ]

    async def _forget(self, name: str, version: str) -> None:
        """Delete a gone replica's member Lease, only as last seen: one that was renewed
        since (the replica came back) is left alone (409)."""
        options = client.V1DeleteOptions(
            preconditions=client.V1Preconditions(resource_version=version)
        )
        try:
            await asyncio.to_thread(
                self.api.delete_namespaced_lease, name, self.namespace, body=options
            )
        except ApiException as exc:
            if exc.status not in (404, 409):
                log.warning("lease %s/%s: not deleted: %s", self.namespace, name, exc)
            return
        except HTTPError as exc:
            log.warning("lease %s/%s: not deleted: %s", self.namespace, name, exc)
            return
        self._members.pop(name, None)
        log.info("lease %s/%s deleted: its replica is gone", self.namespace, name)


def _labels(lease: client.V1Lease) -> dict[str, str]:
    return dict((lease.metadata.labels or {}) if lease.metadata else {})


def fresh(lease: client.V1Lease | None, *, now: datetime) -> bool:
    """Whether a Lease has a holder whose last renewal, by the time it records, is within its
    duration of `now` (the holder's clock and ours: for telling settings apart, not for
    taking the Lease, which LeaseLeadership judges by its own observation)."""
    spec = lease.spec if lease is not None else None
    if spec is None or not spec.holder_identity or spec.renew_time is None:
        return False
    renewed: datetime = spec.renew_time
    if renewed.tzinfo is None:
        renewed = renewed.replace(tzinfo=UTC)
    duration = timedelta(seconds=float(spec.lease_duration_seconds or 0))
    return bool(now < renewed + duration)


class ShardLeases:
    """What an unsharded replica asks before it takes the leader's Lease: which shard Leases of
    its group are still fresh. It takes that Lease only once there are none, so it never
    executes beside sharded replicas."""

    def __init__(self, api_client: client.ApiClient, *, namespace: str, group: str) -> None:
        self.leases = client.CoordinationV1Api(api_client)
        self.namespace, self.group = namespace, group

    def held(self, now: datetime | None = None) -> list[str]:
        """The names of the fresh shard Leases at `now` (blocking). A Role without `list` on
        Leases answers none: no sharded replica could run with it."""
        now = now or datetime.now(UTC)
        try:
            listed = self.leases.list_namespaced_lease(
                namespace=self.namespace,
                label_selector=f"{GROUP_LABEL}={self.group},{ROLE_LABEL}=shard",
            )
        except ApiException as exc:
            if exc.status == 403:
                return []
            raise
        return sorted(
            str(item.metadata.name)
            for item in listed.items
            if item.metadata and fresh(item, now=now)
        )
