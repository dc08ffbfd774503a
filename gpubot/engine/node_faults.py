"""Another fault of a node (another GPU or XID) than its incident's own: a follow-up incident
with its own run, at once when the node's runs have ended, held while one acts."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from gpubot.domain import messages
from gpubot.domain.incidents.correlation import (
    AlertRecord,
    Incident,
    IncidentStatus,
    follow_up_key,
    gpu_fault,
)
from gpubot.domain.results import Message
from gpubot.domain.runbooks.runs import RunStatus
from gpubot.engine.audit_trail import AuditTrail
from gpubot.engine.deps import Engine

log = logging.getLogger(__name__)
_ACTIVE = (RunStatus.RUNNING, RunStatus.WAITING_APPROVAL, RunStatus.HELD)


class NodeFaults:
    """Decides what an alert with another fault of a node does; tells the thread through
    `say` and hands an opened follow-up to `opened` (its thread, plan and run)."""

    def __init__(
        self,
        engine: Engine,
        trail: AuditTrail,
        *,
        say: Callable[[str | None, Message], Awaitable[None]],
        opened: Callable[[Incident], Awaitable[None]],
    ) -> None:
        self.e = engine
        self.trail = trail
        self.say = say
        self.opened = opened

    async def joined(self, incident_id: str, fingerprints: set[str]) -> None:
        """Alerts that joined an XID incident with another fault of the node (another GPU,
        another XID) than the incident's own: each gets a follow-up incident and run of its
        own, at once when the incident's runs have ended, else held (said in the thread,
        audited) until they end. Never only a line in the first incident."""
        incident = await self.e.store.get_incident(incident_id)
        own = gpu_fault(incident.labels)
        if own is None or not incident.is_open:
            return
        new = [
            a
            for a in await self.e.store.alerts_for(incident_id)
            if a.fingerprint in fingerprints
            and a.status == "firing"
            and (fault := gpu_fault(a.labels)) is not None
            and fault != own
        ]
        if not new:
            return
        active = await self.e.store.list_runs(incident_id=incident_id, statuses=_ACTIVE)
        if not active:
            for alert in new:
                await self._split(incident, alert)
            return
        faults = []
        for alert in new:
            fault = gpu_fault(alert.labels)
            faults.append(f"{fault} (alert {alert.fingerprint})")
            await self.trail.record(
                "fault.held",
                actor="alertmanager",
                incident_id=incident_id,
                target=incident.node,
                args={"fingerprint": alert.fingerprint, "fault": fault},
                reason=f"run {active[0].id} is acting on {incident.node}",
            )
        # One message for the payload's new faults of this node, however many: a storm
        # must not bury the thread.
        why = (
            f"another fault on {incident.node}: {'; '.join(faults[:10])}"
            f"{f' and {len(faults) - 10} more' if len(faults) > 10 else ''}. Run "
            f"{active[0].id} is acting on the node now, so each gets a follow-up incident and "
            "run of its own when that run ends (if its alert still fires)"
        )
        log.info("fault held: %s", why, extra={"event": "fault.held", "incident": incident_id})
        await self.say(incident_id, messages.text("New fault held", why))

    async def _split(self, incident: Incident, alert: AlertRecord) -> None:
        """The alert's fault becomes a follow-up incident (opened, or joined when one for the
        same fault is open already); an opened one gets its thread, plan and run."""
        fault = gpu_fault(alert.labels) or "-"
        split = await self.e.store.split_fault(
            incident_id=incident.id,
            fingerprint=alert.fingerprint,
            key=follow_up_key(incident.key, fault),
            now=self.e.clock.now(),
        )
        if split is None:
            return  # resolved meanwhile, or split by another replica already
        follow_up, opened = split
        if not opened:
            return
        await self.trail.record(
            "incident.opened",
            actor="alertmanager",
            incident_id=follow_up.id,
            target=follow_up.node,
            args={"follow_up_of": incident.id, "fault": fault},
            result={"status": follow_up.status.value},
            reason=f"alert {follow_up.alertname} fingerprint {alert.fingerprint}: {fault}, "
            f"another fault of the node of incident {incident.id}",
        )
        await self.say(
            incident.id,
            messages.text(
                "New fault: follow-up incident",
                f"{fault} on {incident.node} (alert {alert.fingerprint}) is incident "
                f"{follow_up.id}, with its own thread and run.",
            ),
        )
        await self.opened(follow_up)

    async def split_waiting(self, incident_id: str) -> None:
        """The other faults of an open XID incident whose runs have all ended (held while
        one acted, or before a restart) become follow-up incidents, if still firing."""
        incident, runs, alerts = await self.e.store.incident_with_runs(incident_id)  # one read
        own = gpu_fault(incident.labels)
        if own is None or not incident.is_open:
            return
        if not runs or any(not r.status.finished for r in runs):
            return
        for alert in alerts:
            fault = gpu_fault(alert.labels)
            if alert.status == "firing" and fault is not None and fault != own:
                await self._split(incident, alert)

    async def at_start(self) -> None:
        """At start: what a run that ended before a restart left held."""
        for incident in await self.e.store.list_incidents(status=IncidentStatus.OPEN, limit=1000):
            if gpu_fault(incident.labels) is not None:
                await self.split_waiting(incident.id)
