"""Incident intake in SQL: deduplicate alerts, open, attach and resolve incidents."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Connection, RowMapping, bindparam, func, insert, select, update

from gpubot.backends.store.database import SqlDatabase, lock_id
from gpubot.backends.store.grouping import GroupCommit
from gpubot.backends.store.tables import alerts, as_utc, incidents
from gpubot.domain.incidents import (
    AlertObservation,
    AlertRecord,
    Incident,
    IncidentStatus,
    IntakeKind,
    IntakeOutcome,
    label_changes,
    new_incident_id,
)
from gpubot.errors import NotFoundError

FIRING = "firing"
RESOLVED = "resolved"
_IN_LIMIT = 500
_Key = TypeVar("_Key", str, int)
_Payload = tuple[list[AlertObservation], datetime]  # one webhook body's alerts, received at


class SqlIncidents(SqlDatabase):
    """IncidentStore: one transaction per webhook payload, the point it is durable."""

    _intake: GroupCommit[_Payload, list[IntakeOutcome]] | None = None

    async def ingest(
        self, items: Sequence[AlertObservation], *, now: datetime
    ) -> list[IntakeOutcome]:
        """Durable when this returns. Payloads that arrive while another is being written
        share the next transaction (group commit): in a storm, one commit serves many."""
        if self._intake is None:
            self._intake = GroupCommit(self._ingest_group)
        return await self._intake.submit((list(items), now))

    async def _ingest_group(self, group: Sequence[_Payload]) -> list[list[IntakeOutcome]]:
        def write(conn: Connection) -> list[list[IntakeOutcome]]:
            if self._postgres:
                # Every payload's locks up front, in one sorted order (see _lock_keys).
                _lock_keys(conn, [item for items, _ in group for item in items])
            # Payloads in their order of arrival; a run of firing-only ones (a storm's shape)
            # is read and written together, deciding item by item as if one after another.
            outcomes: list[list[IntakeOutcome]] = []
            firing: list[_Payload] = []
            for items, now in group:
                if all(item.status == FIRING for item in items):
                    firing.append((items, now))
                    continue
                outcomes += _ingest_firing(conn, firing)
                firing = []
                outcomes.append([_ingest_one(conn, item, now=now) for item in items])
            return outcomes + _ingest_firing(conn, firing)

        return await self._run(write, write=True)

    async def get_incident(self, incident_id: str) -> Incident:
        return await self._run(lambda conn: _get_incident(conn, incident_id), write=False)

    async def list_incidents(
        self, *, status: IncidentStatus | None = None, limit: int = 100
    ) -> list[Incident]:
        query = select(incidents).order_by(incidents.c.created_at.desc(), incidents.c.id.desc())
        if status is not None:
            query = query.where(incidents.c.status == status.value)
        query = query.limit(limit)
        return await self._run(
            lambda conn: [_incident(row) for row in conn.execute(query).mappings()], write=False
        )

    async def alerts_for(self, incident_id: str) -> list[AlertRecord]:
        query = (
            select(alerts)
            .where(alerts.c.incident_id == incident_id)
            .order_by(alerts.c.starts_at, alerts.c.id)
        )
        return await self._run(
            lambda conn: [_alert(row) for row in conn.execute(query).mappings()], write=False
        )


def _lock_keys(conn: Connection, items: Iterable[AlertObservation]) -> None:
    """PostgreSQL: serialise payloads about the same problem across replicas, so two of them
    cannot both open an incident. Sorted, so two payloads never wait on each other in a cycle.
    (SQLite writers are serialised already.)"""
    keys = {lock_id("gpubot.incident:" + item.correlation_key) for item in items}
    for key in sorted(keys):
        conn.execute(select(func.pg_advisory_xact_lock(key)))


def _chunks(values: Iterable[_Key]) -> Iterator[list[_Key]]:
    """Sorted and cut to _IN_LIMIT, so an IN list stays far under any bound-parameter limit."""
    ordered = sorted(set(values))
    for start in range(0, len(ordered), _IN_LIMIT):
        yield ordered[start : start + _IN_LIMIT]


def _ingest_firing(conn: Connection, payloads: Sequence[_Payload]) -> list[list[IntakeOutcome]]:
    """Payloads of firing alerts (a storm's shape) in a handful of statements, not four per
    alert: read what is known, decide item by item exactly as _ingest_one would, each with
    its payload's time, then write with one executemany per table."""
    everything = [item for items, _ in payloads for item in items]
    known: dict[tuple[str, datetime], tuple[int | None, str, str, Mapping[str, str]]] = {}
    for chunk in _chunks(item.fingerprint for item in everything):
        for row in conn.execute(_KNOWN_ALERTS, {"values": chunk}):
            known[(row.fingerprint, as_utc(row.starts_at))] = (
                row.id,
                row.status,
                row.incident_id,
                row.labels,
            )
    open_ids: dict[str, str] = {}
    for chunk in _chunks(item.correlation_key for item in everything):
        open_ids.update(
            (row.key, row.id) for row in conn.execute(_OPEN_INCIDENTS, {"values": chunk})
        )
    new_incidents: list[dict[str, Any]] = []
    new_alerts: list[dict[str, Any]] = []
    touched: dict[str, datetime] = {}  # incident → the time of the last payload naming it
    seen: dict[int, datetime] = {}  # stored alert → the same
    outcomes: list[list[IntakeOutcome]] = []
    for items, now in payloads:
        outcomes.append(payload_outcomes := [])
        for item in items:
            where = (item.fingerprint, as_utc(item.starts_at))
            if (hit := known.get(where)) is not None:
                alert_id, status, incident_id, stored_labels = hit
                kind = IntakeKind.DUPLICATE
                if status != FIRING:  # a firing re-send of a resolved alert: see _ingest_one
                    kind = IntakeKind.IGNORED
                elif alert_id is not None:  # None: stored by this call a moment ago
                    seen[alert_id] = now
                payload_outcomes.append(_resent(item, kind, incident_id, stored_labels))
                continue
            open_id = open_ids.get(item.correlation_key)
            if open_id is None:
                incident_id = open_ids[item.correlation_key] = new_incident_id()
                new_incidents.append(_new_incident(incident_id, item, now=now))
                kind = IntakeKind.OPENED
            else:
                incident_id = open_id
                touched[incident_id] = now
                kind = IntakeKind.ATTACHED
            new_alerts.append(_alert_row(item, incident_id, now=now))
            known[where] = (None, FIRING, incident_id, item.labels)
            payload_outcomes.append(IntakeOutcome(item.fingerprint, kind, incident_id))
    if new_incidents:
        conn.execute(_INSERT_INCIDENTS, new_incidents)
    if new_alerts:
        conn.execute(_INSERT_ALERTS, new_alerts)
    if touched:
        conn.execute(_TOUCH_INCIDENTS, _stamps(touched))
    if seen:
        conn.execute(_SEEN_ALERTS, _stamps(seen))
    return outcomes


def _stamps(times: dict[_Key, datetime]) -> list[dict[str, Any]]:
    """Rows for an executemany update, in key order (PostgreSQL row locks in one order)."""
    return [{"b_id": key, "b_now": at} for key, at in sorted(times.items())]


# Built once: a statement object caches its compiled form, where one built per call would
# pay for construction and its cache key every time (nearly half of this path's cost).
_KNOWN_ALERTS = select(
    alerts.c.id,
    alerts.c.fingerprint,
    alerts.c.starts_at,
    alerts.c.status,
    alerts.c.incident_id,
    alerts.c.labels,
).where(alerts.c.fingerprint.in_(bindparam("values", expanding=True)))
_OPEN_INCIDENTS = select(incidents.c.key, incidents.c.id).where(
    incidents.c.key.in_(bindparam("values", expanding=True)),
    incidents.c.status == IncidentStatus.OPEN.value,
)
_GET_INCIDENT = select(incidents).where(incidents.c.id == bindparam("incident_id"))
_INSERT_INCIDENTS = insert(incidents)
_INSERT_ALERTS = insert(alerts)
# Executed many: one row each, with the time of the payload that touched or saw it.
_TOUCH_INCIDENTS = (
    update(incidents)
    .where(incidents.c.id == bindparam("b_id"))
    .values(updated_at=bindparam("b_now"))
)
_SEEN_ALERTS = (
    update(alerts).where(alerts.c.id == bindparam("b_id")).values(last_seen_at=bindparam("b_now"))
)


def _ingest_one(conn: Connection, item: AlertObservation, *, now: datetime) -> IntakeOutcome:
    row = (
        conn.execute(
            select(alerts.c.id, alerts.c.status, alerts.c.incident_id, alerts.c.labels).where(
                alerts.c.fingerprint == item.fingerprint, alerts.c.starts_at == item.starts_at
            )
        )
        .mappings()
        .first()
    )
    if row is None:
        return _new_alert(conn, item, now=now)
    incident_id: str = row["incident_id"]
    if row["status"] == item.status:
        conn.execute(update(alerts).where(alerts.c.id == row["id"]).values(last_seen_at=now))
        return _resent(item, IntakeKind.DUPLICATE, incident_id, row["labels"])
    if item.status != RESOLVED:
        # A firing re-send of an alert that already resolved (a replay, a late retry):
        # reopening would restart remediation for a problem that is gone.
        return _resent(item, IntakeKind.IGNORED, incident_id, row["labels"])
    conn.execute(
        update(alerts)
        .where(alerts.c.id == row["id"])
        .values(status=RESOLVED, ends_at=item.ends_at or now, last_seen_at=now)
    )
    still_firing = conn.scalar(
        select(alerts.c.id)
        .where(alerts.c.incident_id == incident_id, alerts.c.status == FIRING)
        .limit(1)
    )
    if still_firing is not None:
        _touch(conn, incident_id, now=now)
        return IntakeOutcome(item.fingerprint, IntakeKind.ALERT_RESOLVED, incident_id)
    conn.execute(
        update(incidents)
        .where(incidents.c.id == incident_id, incidents.c.status == IncidentStatus.OPEN.value)
        .values(status=IncidentStatus.RESOLVED.value, resolved_at=now, updated_at=now)
    )
    return IntakeOutcome(item.fingerprint, IntakeKind.INCIDENT_RESOLVED, incident_id)


def _resent(
    item: AlertObservation, kind: IntakeKind, incident_id: str, stored: Mapping[str, str]
) -> IntakeOutcome:
    """A re-send of a stored alert; with other labels it is a conflict, never silently
    merged: the stored labels stand and the difference goes to the incident."""
    if changes := label_changes(stored, item.labels):
        return IntakeOutcome(item.fingerprint, IntakeKind.CONFLICT, incident_id, changes)
    return IntakeOutcome(item.fingerprint, kind, incident_id)


def _new_alert(conn: Connection, item: AlertObservation, *, now: datetime) -> IntakeOutcome:
    if item.status == RESOLVED:
        # Nothing to resolve: we never saw it fire (or it predates this database).
        return IntakeOutcome(item.fingerprint, IntakeKind.IGNORED, None)
    incident_id = conn.scalar(
        select(incidents.c.id).where(
            incidents.c.key == item.correlation_key,
            incidents.c.status == IncidentStatus.OPEN.value,
        )
    )
    if incident_id is None:
        incident_id = new_incident_id()
        conn.execute(insert(incidents).values(**_new_incident(incident_id, item, now=now)))
        kind = IntakeKind.OPENED
    else:
        _touch(conn, incident_id, now=now)
        kind = IntakeKind.ATTACHED
    conn.execute(insert(alerts).values(**_alert_row(item, incident_id, now=now)))
    return IntakeOutcome(item.fingerprint, kind, incident_id)


def _alert_row(item: AlertObservation, incident_id: str, *, now: datetime) -> dict[str, Any]:
    return {
        "fingerprint": item.fingerprint,
        "starts_at": item.starts_at,
        "incident_id": incident_id,
        "status": item.status,
        "labels": dict(item.labels),
        "annotations": dict(item.annotations),
        "group_key": item.group_key,
        "ends_at": item.ends_at,
        "received_at": now,
        "last_seen_at": now,
    }


def _new_incident(incident_id: str, item: AlertObservation, *, now: datetime) -> dict[str, Any]:
    return {
        "id": incident_id,
        "key": item.correlation_key,
        "status": IncidentStatus.OPEN.value,
        "alertname": item.alertname,
        "cluster": item.cluster,
        "node": item.node,
        "severity": item.severity,
        "summary": item.summary,
        "labels": dict(item.labels),
        "annotations": dict(item.annotations),
        "generator_url": item.generator_url,
        "created_at": now,
        "updated_at": now,
        "resolved_at": None,
    }


def _touch(conn: Connection, incident_id: str, *, now: datetime) -> None:
    conn.execute(update(incidents).where(incidents.c.id == incident_id).values(updated_at=now))


def _get_incident(conn: Connection, incident_id: str) -> Incident:
    row = conn.execute(_GET_INCIDENT, {"incident_id": incident_id}).mappings().first()
    if row is None:
        raise NotFoundError(f"no incident {incident_id}")
    return _incident(row)


def _incident(row: RowMapping) -> Incident:
    return Incident(
        id=row["id"],
        key=row["key"],
        status=IncidentStatus(row["status"]),
        alertname=row["alertname"],
        cluster=row["cluster"],
        node=row["node"],
        severity=row["severity"],
        summary=row["summary"],
        labels=row["labels"],
        annotations=row["annotations"],
        generator_url=row["generator_url"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        resolved_at=row["resolved_at"],
    )


def _alert(row: RowMapping) -> AlertRecord:
    return AlertRecord(
        fingerprint=row["fingerprint"],
        starts_at=row["starts_at"],
        incident_id=row["incident_id"],
        status=row["status"],
        labels=row["labels"],
        annotations=row["annotations"],
        ends_at=row["ends_at"],
        received_at=row["received_at"],
        last_seen_at=row["last_seen_at"],
    )
