"""Incidents and alerts in SQL: intake reads what the domain needs to decide a batch of
payloads (gpubot.domain.incidents.intake) and writes what it decided; reads of incidents and
alerts."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, bindparam, func, insert, select, update

from gpubot.backends.store.database import SqlDatabase, lock_id
from gpubot.backends.store.grouping import GroupCommit
from gpubot.backends.store.prepared import Prepared, Record
from gpubot.backends.store.tables import alerts, incidents
from gpubot.domain.incidents.correlation import (
    AlertObservation,
    AlertRecord,
    Incident,
    IncidentStatus,
)
from gpubot.domain.incidents.intake import (
    FIRING,
    RESOLVED,
    IntakeKind,
    IntakeOutcome,
    IntakeState,
    IntakeWrites,
    Payload,
    StoredAlert,
    decide,
    new_incident_id,
)
from gpubot.domain.instants import as_utc
from gpubot.errors import NotFoundError

_IN_LIMIT = 500
_Key = TypeVar("_Key", str, int)


class SqlIncidents(SqlDatabase):
    """IncidentStore: one transaction per webhook payload, the point it is durable."""

    def __init__(self, *, engine: Engine, audit_key: bytes | None = None) -> None:
        super().__init__(engine=engine, audit_key=audit_key)
        self._intake: GroupCommit[Payload, list[IntakeOutcome]] = GroupCommit(self._ingest_group)

    async def ingest(
        self, items: Sequence[AlertObservation], *, now: datetime
    ) -> list[IntakeOutcome]:
        """Durable when this returns. Payloads that arrive while another is being written
        share the next transaction (group commit): in a storm, one commit serves many."""
        return await self._intake.submit((list(items), now))

    async def _ingest_group(self, group: Sequence[Payload]) -> list[list[IntakeOutcome]]:
        """Read what is stored about the group's alerts, let the domain decide payload by
        payload (gpubot.domain.incidents.intake), then write what it decided: a handful of
        statements for the whole group, not a few per alert."""

        def write(conn: Connection) -> list[list[IntakeOutcome]]:
            items = [item for payload, _ in group for item in payload]
            if self._postgres:
                # Every payload's locks up front, in one sorted order (see _lock_keys).
                _lock_keys(conn, items)
            state = _read_state(conn, items)
            outcomes, writes = decide(state, group)
            _write(conn, writes)
            return _with_incidents(conn, outcomes)

        return await self._run(write, write=True)

    async def split_fault(
        self, *, incident_id: str, fingerprint: str, key: str, now: datetime
    ) -> tuple[Incident, bool] | None:
        """Move the firing alert `fingerprint` of `incident_id` into the open incident keyed
        `key` (a follow-up for another fault of the node), opening it from the alert when
        there is none: (that incident, whether it was opened). None when the alert is no
        longer firing there (resolved, or moved already). One transaction; on PostgreSQL
        under the key's lock, and the unique open key is the backstop."""

        def split(conn: Connection) -> tuple[Incident, bool] | None:
            if self._postgres:
                conn.execute(select(func.pg_advisory_xact_lock(lock_id("gpubot.incident:" + key))))
            row = (
                conn.execute(
                    select(alerts).where(
                        alerts.c.incident_id == incident_id,
                        alerts.c.fingerprint == fingerprint,
                        alerts.c.status == FIRING,
                    )
                )
                .mappings()
                .first()
            )
            if row is None:
                return None
            found = (
                conn.execute(
                    select(incidents).where(
                        incidents.c.key == key, incidents.c.status == IncidentStatus.OPEN.value
                    )
                )
                .mappings()
                .first()
            )
            opened = found is None
            if found is None:
                origin = get_incident_row(conn, incident_id)
                labels: dict[str, str] = dict(row["labels"])
                annotations: dict[str, str] = dict(row["annotations"])
                summary = annotations.get("summary") or annotations.get("description") or ""
                target = {
                    "id": new_incident_id(),
                    "key": key,
                    "status": IncidentStatus.OPEN.value,
                    "alertname": origin.alertname,
                    "cluster": origin.cluster,
                    "node": origin.node,
                    "severity": labels.get("severity", origin.severity),
                    "summary": summary or origin.summary,
                    "labels": labels,
                    "annotations": annotations,
                    "generator_url": origin.generator_url,
                    "created_at": now,
                    "updated_at": now,
                    "resolved_at": None,
                }
                conn.execute(insert(incidents).values(**target))
                target_id = str(target["id"])
            else:
                target_id = str(found["id"])
            conn.execute(
                update(alerts).where(alerts.c.id == row["id"]).values(incident_id=target_id)
            )
            return get_incident_row(conn, target_id), opened

        return await self._run(split, write=True)

    async def get_incident(self, incident_id: str) -> Incident:
        return await self._run(lambda conn: get_incident_row(conn, incident_id), write=False)

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
        return await self._run(lambda conn: alerts_of(conn, incident_id), write=False)


_ALERTS_OF = Prepared(
    select(alerts)
    .where(alerts.c.incident_id == bindparam("incident_id"))
    .order_by(alerts.c.starts_at, alerts.c.id)
)


def alerts_of(conn: Connection, incident_id: str) -> list[AlertRecord]:
    """An incident's alerts, oldest first."""
    return [_alert(row) for row in _ALERTS_OF.rows(conn, {"incident_id": incident_id})]


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


def _read_state(conn: Connection, items: Sequence[AlertObservation]) -> IntakeState:
    """What the domain needs to decide the group: its alerts as stored, the open incident of
    each correlation key and, when an alert resolves, the firing alerts of those incidents."""
    state = IntakeState()
    for chunk in _chunks(item.fingerprint for item in items):
        for row in conn.execute(_KNOWN_ALERTS, {"values": chunk}):
            key = (row.fingerprint, as_utc(row.starts_at))
            state.alerts[key] = StoredAlert(row.status, row.incident_id, row.labels)
    for chunk in _chunks(item.correlation_key for item in items):
        state.open_incidents.update(
            (row.key, row.id) for row in conn.execute(_OPEN_INCIDENTS, {"values": chunk})
        )
    if any(item.status == RESOLVED for item in items):
        involved = {a.incident_id for a in state.alerts.values()}
        involved.update(state.open_incidents.values())
        for chunk in _chunks(involved):
            for fingerprint, starts_at, incident_id in conn.execute(
                _FIRING_ALERTS, {"values": chunk}
            ):
                key = (fingerprint, as_utc(starts_at))
                state.firing.setdefault(incident_id, set()).add(key)
    return state


def _write(conn: Connection, writes: IntakeWrites) -> None:
    """Resolutions of incidents stored before first, then inserts (an incident opened and
    resolved in the group is inserted resolved), then the other updates: at no point are two
    incidents of one problem open (uq_incidents_open_key), and an alert may be stored and
    resolved in one group."""
    new = {n.id for n in writes.new_incidents}
    resolved_before = {i: at for i, at in writes.resolved_incidents.items() if i not in new}
    if resolved_before:
        conn.execute(_RESOLVE_INCIDENTS, _stamps(resolved_before))
    if writes.new_incidents:
        rows = []
        for n in writes.new_incidents:
            row = _new_incident(n.id, n.item, now=n.at)
            if (at := writes.resolved_incidents.get(n.id)) is not None:
                row.update(status=IncidentStatus.RESOLVED.value, resolved_at=at, updated_at=at)
            rows.append(row)
        conn.execute(_INSERT_INCIDENTS, rows)
    if writes.new_alerts:
        rows = [_alert_row(a.item, a.incident_id, now=a.at) for a in writes.new_alerts]
        conn.execute(_INSERT_ALERTS, rows)
    if writes.touched:
        conn.execute(_TOUCH_INCIDENTS, _stamps(writes.touched))
    if writes.seen:
        rows = [
            {"b_fp": fp, "b_start": start, "b_now": at}
            for (fp, start), at in sorted(writes.seen.items())
        ]
        conn.execute(_SEEN_ALERTS, rows)
    if writes.resolved_alerts:
        rows = [
            {"b_fp": fp, "b_start": start, "b_ends": ends, "b_now": at}
            for (fp, start), (ends, at) in sorted(writes.resolved_alerts.items())
        ]
        conn.execute(_RESOLVE_ALERTS, rows)


def _stamps(times: dict[_Key, datetime]) -> list[dict[str, Any]]:
    """Rows for an executemany update, in key order (PostgreSQL row locks in one order)."""
    return [{"b_id": key, "b_now": at} for key, at in sorted(times.items())]


# Built once: a statement object caches its compiled form, where one built per call would
# pay for construction and its cache key every time (nearly half of this path's cost).
_KNOWN_ALERTS = select(
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
_GET_INCIDENT = Prepared(select(incidents).where(incidents.c.id == bindparam("incident_id")))
_INSERT_INCIDENTS = insert(incidents)
_INSERT_ALERTS = insert(alerts)
# Executed many: one row each, with the time of the payload that touched or saw it.
_TOUCH_INCIDENTS = (
    update(incidents)
    .where(incidents.c.id == bindparam("b_id"))
    .values(updated_at=bindparam("b_now"))
)
_BY_KEY = (
    alerts.c.fingerprint == bindparam("b_fp"),
    alerts.c.starts_at == bindparam("b_start"),
)
_SEEN_ALERTS = update(alerts).where(*_BY_KEY).values(last_seen_at=bindparam("b_now"))
_RESOLVE_ALERTS = (
    update(alerts)
    .where(*_BY_KEY)
    .values(status=RESOLVED, ends_at=bindparam("b_ends"), last_seen_at=bindparam("b_now"))
)
_FIRING_ALERTS = select(alerts.c.fingerprint, alerts.c.starts_at, alerts.c.incident_id).where(
    alerts.c.incident_id.in_(bindparam("values", expanding=True)), alerts.c.status == FIRING
)
# Only an open incident resolves (one a person closed stays as they left it).
_RESOLVE_INCIDENTS = (
    update(incidents)
    .where(incidents.c.id == bindparam("b_id"), incidents.c.status == IncidentStatus.OPEN.value)
    .values(
        status=IncidentStatus.RESOLVED.value,
        resolved_at=bindparam("b_now"),
        updated_at=bindparam("b_now"),
    )
)


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


def _with_incidents(
    conn: Connection, outcomes: list[list[IntakeOutcome]]
) -> list[list[IntakeOutcome]]:
    """Each outcome that opened or resolved its incident, with that incident as this
    transaction leaves it (read here, inside it, once per incident)."""
    read: dict[str, Incident] = {}
    done: list[list[IntakeOutcome]] = []
    for payload in outcomes:
        kept = []
        for outcome in payload:
            if outcome.incident_id is not None and outcome.kind in _READ_BACK:
                if outcome.incident_id not in read:
                    read[outcome.incident_id] = get_incident_row(conn, outcome.incident_id)
                outcome = replace(outcome, incident=read[outcome.incident_id])
            kept.append(outcome)
        done.append(kept)
    return done


_READ_BACK = (IntakeKind.OPENED, IntakeKind.INCIDENT_RESOLVED)


def get_incident_row(conn: Connection, incident_id: str) -> Incident:
    row = _GET_INCIDENT.first(conn, {"incident_id": incident_id})
    if row is None:
        raise NotFoundError(f"no incident {incident_id}")
    return _incident(row)


_INCIDENT_STATUS = Prepared(
    select(incidents.c.status).where(incidents.c.id == bindparam("incident_id"))
)


def incident_is_open(conn: Connection, incident_id: str) -> bool:
    """Whether the incident is open: its status column alone."""
    status = _INCIDENT_STATUS.scalar(conn, {"incident_id": incident_id})
    if status is None:
        raise NotFoundError(f"no incident {incident_id}")
    return IncidentStatus(status) is IncidentStatus.OPEN


def _incident(row: Record) -> Incident:
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


def _alert(row: Record) -> AlertRecord:
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
