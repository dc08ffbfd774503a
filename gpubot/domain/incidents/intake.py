"""Intake decisions: what each alert of a webhook payload does to the incidents, decided from
what is stored, as a pure function. The store reads the state and writes the decisions."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from gpubot.domain.incidents.correlation import (
    XID_ACTION_LABEL,
    XID_RECOVERY_LABEL,
    AlertObservation,
    Incident,
    gpu_fault,
)
from gpubot.domain.instants import as_utc


class IntakeKind(StrEnum):
    OPENED = "opened"  # a new incident was opened for this alert
    ATTACHED = "attached"  # a new alert joined an open incident
    DUPLICATE = "duplicate"  # a re-send of an alert already stored, same status
    ALERT_RESOLVED = "alert_resolved"  # the alert resolved; its incident still has firing alerts
    INCIDENT_RESOLVED = "incident_resolved"  # the alert resolved and so did its incident
    IGNORED = (
        "ignored"  # a stale firing re-send after resolution, or a resolve for an unknown alert
    )
    # A re-send with the fingerprint and start of a stored alert but other labels: the stored
    # labels stand, and the difference is noted in the incident.
    CONFLICT = "conflict"
    REJECTED = "rejected"  # an alert that cannot be used (its reason in `detail`); not stored


@dataclass(frozen=True)
class IntakeOutcome:
    fingerprint: str
    kind: IntakeKind
    incident_id: str | None
    detail: str = ""  # why, for CONFLICT and REJECTED
    # For an ATTACHED XID alert, its fault (GPU and XID, incidents.gpu_fault): another fault
    # of the node than its incident's own gets a follow-up; None for any other alert.
    fault: str | None = None
    # The incident as the intake's own transaction left it, where the store read it there
    # (an OPENED or INCIDENT_RESOLVED outcome): the follow-up needs no read of its own.
    incident: Incident | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class IntakeSummary:
    """What one webhook's alerts came to, as the webhook's answer counts them."""

    outcomes: tuple[IntakeOutcome, ...]

    def count(self, kind: IntakeKind) -> int:
        return sum(1 for o in self.outcomes if o.kind is kind)

    def as_json(self) -> dict[str, int]:
        return {kind.value: self.count(kind) for kind in IntakeKind if self.count(kind)}


def new_incident_id() -> str:
    return "inc-" + secrets.token_hex(5)


def label_changes(stored: Mapping[str, str], sent: Mapping[str, str]) -> str:
    """What differs between two label sets, as one short line ("" when nothing does)."""
    parts = []
    for name in sorted(set(stored) | set(sent)):
        before, after = stored.get(name), sent.get(name)
        if before == after or name in (XID_ACTION_LABEL, XID_RECOVERY_LABEL):
            continue
        if before is None:
            parts.append(f"{name} added ({after!r:.60})")
        elif after is None:
            parts.append(f"{name} missing (stored {before!r:.60})")
        else:
            parts.append(f"{name}: stored {before!r:.60}, sent {after!r:.60}")
    return "; ".join(parts[:8]) + (f" (and {len(parts) - 8} more)" if len(parts) > 8 else "")


FIRING = "firing"
RESOLVED = "resolved"
AlertKey = tuple[str, datetime]  # (fingerprint, startsAt in UTC): one alert, as stored


def alert_key(item: AlertObservation) -> AlertKey:
    return item.fingerprint, as_utc(item.starts_at)


@dataclass(frozen=True)
class StoredAlert:
    status: str  # FIRING or RESOLVED
    incident_id: str
    labels: Mapping[str, str]


@dataclass
class IntakeState:
    """What the store holds about a batch's alerts, read before deciding.

    `alerts`: every stored alert with a fingerprint of the batch. `open_incidents`: the open
    incident of each correlation key of the batch. `firing`: when the batch resolves any
    alert, the firing alerts of every incident named in `alerts` or `open_incidents` (a
    resolution that leaves an incident none resolves it)."""

    alerts: dict[AlertKey, StoredAlert] = field(default_factory=dict)
    open_incidents: dict[str, str] = field(default_factory=dict)
    firing: dict[str, set[AlertKey]] = field(default_factory=dict)


@dataclass(frozen=True)
class NewIncident:
    id: str
    item: AlertObservation  # the alert that opened it
    at: datetime


@dataclass(frozen=True)
class NewAlert:
    item: AlertObservation
    incident_id: str
    at: datetime


@dataclass
class IntakeWrites:
    """What the store must write. An incident in both `new_incidents` and
    `resolved_incidents` opened and resolved within the batch; an alert in `new_alerts` may
    be seen or resolved later in the same batch."""

    new_incidents: list[NewIncident] = field(default_factory=list)
    new_alerts: list[NewAlert] = field(default_factory=list)
    touched: dict[str, datetime] = field(default_factory=dict)  # incident → updated_at
    seen: dict[AlertKey, datetime] = field(default_factory=dict)  # alert → last_seen_at
    # alert → (ends_at, last_seen_at): the alert resolved
    resolved_alerts: dict[AlertKey, tuple[datetime, datetime]] = field(default_factory=dict)
    resolved_incidents: dict[str, datetime] = field(default_factory=dict)  # incident → at


Payload = tuple[Sequence[AlertObservation], datetime]  # one webhook body's alerts, received at


def decide(
    state: IntakeState,
    payloads: Sequence[Payload],
    *,
    new_id: Callable[[], str] = new_incident_id,
) -> tuple[list[list[IntakeOutcome]], IntakeWrites]:
    """Each payload's outcomes, alert by alert in order, as if each payload came alone after
    the ones before it; and the writes that make the store say so. `state` is updated as the
    decisions go (a caller reading it afterwards sees the state after the batch)."""
    writes = IntakeWrites()
    outcomes = [
        [_decide_one(state, writes, item, now, new_id) for item in items] for items, now in payloads
    ]
    return outcomes, writes


def _decide_one(
    state: IntakeState,
    writes: IntakeWrites,
    item: AlertObservation,
    now: datetime,
    new_id: Callable[[], str],
) -> IntakeOutcome:
    key = alert_key(item)
    stored = state.alerts.get(key)
    if stored is None:
        return _new_alert(state, writes, item, key, now, new_id)
    if stored.status == item.status:
        _seen(writes, key, now)
        return _resent(item, IntakeKind.DUPLICATE, stored)
    if item.status != RESOLVED:
        # A firing re-send of an alert that already resolved (a replay, a late retry):
        # reopening would restart remediation for a problem that is gone.
        return _resent(item, IntakeKind.IGNORED, stored)
    return _resolve(state, writes, item, key, stored, now)


def _new_alert(
    state: IntakeState,
    writes: IntakeWrites,
    item: AlertObservation,
    key: AlertKey,
    now: datetime,
    new_id: Callable[[], str],
) -> IntakeOutcome:
    if item.status == RESOLVED:
        # Nothing to resolve: it was never seen firing (or it predates this database).
        return IntakeOutcome(item.fingerprint, IntakeKind.IGNORED, None)
    incident_id = state.open_incidents.get(item.correlation_key)
    fault: str | None = None
    if incident_id is None:
        incident_id = state.open_incidents[item.correlation_key] = new_id()
        writes.new_incidents.append(NewIncident(incident_id, item, now))
        kind = IntakeKind.OPENED
    else:
        writes.touched[incident_id] = now
        kind = IntakeKind.ATTACHED
        fault = gpu_fault(item.labels)
    writes.new_alerts.append(NewAlert(item, incident_id, now))
    state.alerts[key] = StoredAlert(FIRING, incident_id, item.labels)
    state.firing.setdefault(incident_id, set()).add(key)
    return IntakeOutcome(item.fingerprint, kind, incident_id, fault=fault)


def _resolve(
    state: IntakeState,
    writes: IntakeWrites,
    item: AlertObservation,
    key: AlertKey,
    stored: StoredAlert,
    now: datetime,
) -> IntakeOutcome:
    incident_id = stored.incident_id
    state.alerts[key] = StoredAlert(RESOLVED, incident_id, stored.labels)
    writes.seen.pop(key, None)  # the resolution writes last_seen_at itself
    writes.resolved_alerts[key] = (item.ends_at or now, now)
    firing = state.firing.setdefault(incident_id, set())
    firing.discard(key)
    if firing:
        writes.touched[incident_id] = now
        return IntakeOutcome(item.fingerprint, IntakeKind.ALERT_RESOLVED, incident_id)
    writes.resolved_incidents[incident_id] = now
    writes.touched.pop(incident_id, None)  # the resolution writes updated_at itself
    for correlation_key, open_id in list(state.open_incidents.items()):
        if open_id == incident_id:
            del state.open_incidents[correlation_key]
    return IntakeOutcome(item.fingerprint, IntakeKind.INCIDENT_RESOLVED, incident_id)


def _seen(writes: IntakeWrites, key: AlertKey, now: datetime) -> None:
    if key in writes.resolved_alerts:  # resolved earlier in the batch: keep one write
        ends_at, _ = writes.resolved_alerts[key]
        writes.resolved_alerts[key] = (ends_at, now)
    else:
        writes.seen[key] = now


def _resent(item: AlertObservation, kind: IntakeKind, stored: StoredAlert) -> IntakeOutcome:
    """A re-send of a stored alert; with other labels it is a conflict, never silently
    merged: the stored labels stand and the difference goes to the incident."""
    if changes := label_changes(stored.labels, item.labels):
        return IntakeOutcome(item.fingerprint, IntakeKind.CONFLICT, stored.incident_id, changes)
    return IntakeOutcome(item.fingerprint, kind, stored.incident_id)
