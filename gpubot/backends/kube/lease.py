"""Leader election on a coordination.k8s.io/v1 Lease, with resourceVersion-checked updates."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from gpubot.clock import SystemClock
from gpubot.ports import Clock

log = logging.getLogger(__name__)
READ = object()  # try_acquire_or_renew's `seen` when the round reads the Lease itself


class LeaseLeadership:
    """The Leadership port: this replica leads while it holds a fresh Lease.

    Expiry is judged as client-go does, from local observation, not the other replica's clock:
    a Lease whose record has not changed for `lease_seconds` of our time is free to take.
    `is_leader()` is false as soon as a renewal fails to land or the Lease is seen with
    another holder, and also once our own last renewal is older than the lease duration.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        identity: str,
        namespace: str = "gpubot",
        name: str = "gpubot-leader",
        lease_seconds: float = 15.0,
        renew_seconds: float = 5.0,
        clock: Clock | None = None,
        labels: dict[str, str] | None = None,
        may_take: Callable[[], bool] | None = None,
    ) -> None:
        """`may_take` (blocking, called in the round's thread): asked before taking the Lease
        from no one or from an expired holder; False leaves it to the others for now."""
        self.api = client.CoordinationV1Api(api_client)
        self.labels = dict(labels or {})  # set when this replica creates the Lease
        self.may_take = may_take
        self.last_seen: client.V1Lease | None = None  # as the last round read it
        self.identity = identity
        self.namespace, self.name = namespace, name
        self.lease_seconds, self.renew_seconds = lease_seconds, renew_seconds
        self._clock: Clock = clock or SystemClock()
        self._mono = self._clock.monotonic
        self._renewed_at: float | None = None  # when our last write landed
        self._observed: tuple[str, float] | None = None  # (resourceVersion, when first seen)
        self._task: asyncio.Task[None] | None = None
        self._terms = 0  # how many times this replica took the Lease

    def is_leader(self) -> bool:
        return self._renewed_at is not None and self._mono() - self._renewed_at < self.lease_seconds

    def leads(self, key: str) -> bool:
        """One Lease for everything: the holder starts every run's steps."""
        return self.is_leader()

    def term(self) -> int | None:
        return self._terms if self.is_leader() else None

    async def start(self) -> None:
        if self._task is None:
            await self.try_acquire_or_renew()
            self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        """Stop renewing and release the Lease if we hold it, so another replica takes over
        at once instead of after the lease duration (client-go's ReleaseOnCancel)."""
        held = self._renewed_at is not None
        self._renewed_at = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if held:
            await self.release()

    async def release(self) -> bool:
        """Give the Lease up: no holder, a one-second duration. True when our write landed;
        a Lease someone else already holds is left alone."""
        self._renewed_at = None
        try:
            return await asyncio.to_thread(self._release)
        except (ApiException, HTTPError) as exc:
            log.warning("lease %s/%s: release failed: %s", self.namespace, self.name, exc)
            return False

    def _release(self) -> bool:
        lease = self.api.read_namespaced_lease(name=self.name, namespace=self.namespace)
        spec = lease.spec or client.V1LeaseSpec()
        if spec.holder_identity != self.identity:
            return False
        now = _micro_time(self._clock.now())
        lease.spec = client.V1LeaseSpec(
            holder_identity=None,
            lease_duration_seconds=1,
            acquire_time=now,
            renew_time=now,
            lease_transitions=spec.lease_transitions,
        )
        # The version we read: a replica that took the Lease meanwhile keeps it.
        if not self._replace(lease):
            return False
        log.info("lease %s/%s released", self.namespace, self.name)
        return True

    async def _loop(self) -> None:
        while True:
            await self._clock.sleep(self.renew_seconds)
            await self.try_acquire_or_renew()

    async def try_acquire_or_renew(
        self, *, take: bool = True, seen: client.V1Lease | object | None = READ
    ) -> bool:
        """One round: renew the Lease we hold, or take it when it is free or expired (only
        with `take`; without, a Lease someone else holds or held is only observed, so that
        its expiry is judged from then on). True when we hold it now. `seen`: the Lease as
        a LIST just returned it (None: not there), instead of reading it here."""
        held = self.is_leader()
        try:
            won = await asyncio.to_thread(self._round, take, seen)
        except (ApiException, HTTPError) as exc:
            log.warning("lease %s/%s: %s", self.namespace, self.name, exc)
            won = False
        if won:
            self._renewed_at = self._mono()
            if not held:
                self._terms += 1
        else:
            self._renewed_at = None  # stop starting steps at once
        return won

    def _spec(self, *, transitions: int, acquired: datetime | None) -> client.V1LeaseSpec:
        now = _micro_time(self._clock.now())
        return client.V1LeaseSpec(
            holder_identity=self.identity,
            lease_duration_seconds=max(1, round(self.lease_seconds)),
            acquire_time=_micro_time(acquired) if acquired else now,
            renew_time=now,
            lease_transitions=transitions,
        )

    def _round(self, take: bool = True, seen: client.V1Lease | object | None = READ) -> bool:
        """One election round (blocking; runs in a thread). True when we hold the Lease."""
        lease = self._read() if seen is READ else seen
        self.last_seen = lease if isinstance(lease, client.V1Lease) else None
        if not isinstance(lease, client.V1Lease):  # not there yet
            if not take or (self.may_take is not None and not self.may_take()):
                return False
            body = client.V1Lease(
                metadata=client.V1ObjectMeta(
                    name=self.name, namespace=self.namespace, labels=self.labels or None
                ),
                spec=self._spec(transitions=0, acquired=None),
            )
            try:
                self.api.create_namespaced_lease(namespace=self.namespace, body=body)
            except ApiException as create_exc:
                if create_exc.status == 409:  # another replica created it first
                    return False
                raise
            return True
        spec = lease.spec or client.V1LeaseSpec()
        version = str(lease.metadata.resource_version if lease.metadata else "")
        now = self._mono()
        if self._observed is None or self._observed[0] != version:
            self._observed = (version, now)
        mine = spec.holder_identity == self.identity
        duration = float(spec.lease_duration_seconds or self.lease_seconds)
        expired = not spec.holder_identity or now - self._observed[1] >= duration
        if not mine and (not expired or not take):
            return False
        if not mine and self.may_take is not None and not self.may_take():
            return False
        transitions = int(spec.lease_transitions or 0) + (0 if mine else 1)
        lease.spec = self._spec(
            transitions=transitions, acquired=spec.acquire_time if mine else None
        )
        return self._replace(lease)

    def _read(self) -> client.V1Lease | None:
        try:
            lease: client.V1Lease = self.api.read_namespaced_lease(
                name=self.name, namespace=self.namespace
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return lease

    def _replace(self, lease: client.V1Lease) -> bool:
        """Write the Lease as read: False when anyone wrote it since (409 on its
        metadata.resourceVersion), so two replicas never both win."""
        try:
            self.api.replace_namespaced_lease(name=self.name, namespace=self.namespace, body=lease)
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        return True


def _micro_time(at: datetime) -> datetime:
    """A time the API server parses as a MicroTime. The client writes `isoformat()`, which
    drops the fraction when the microseconds are zero, and the server answers 400 to that;
    one microsecond later is the same time for a Lease."""
    return at if at.microsecond else at + timedelta(microseconds=1)
