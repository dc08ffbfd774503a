"""A payload is stored in a few statements, with the same outcomes as its alerts sent one per
payload: same kinds, same incidents, same rows, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import event

from gpubot.backends.store import SqlStore, open_store
from gpubot.domain.incidents.alerts import Alert
from gpubot.domain.incidents.correlation import AlertObservation, observe
from gpubot.domain.incidents.intake import IntakeKind, IntakeOutcome

T0 = datetime(2026, 11, 22, 1, 39, 20, tzinfo=UTC)
NOW = datetime(2026, 11, 22, 2, 0, 0, tzinfo=UTC)


def fired(fingerprint: str, node: str, *, status: str = "firing", **over: Any) -> AlertObservation:
    alert: dict[str, Any] = {
        "status": status,
        "labels": {"alertname": "GPUMemoryNearFull", "cluster": "sim", "Hostname": node},
        "annotations": {"summary": f"memory on {node}"},
        "startsAt": T0.isoformat(),
        "endsAt": (T0 + timedelta(minutes=5)).isoformat() if status == "resolved" else "",
        "fingerprint": fingerprint,
        **over,
    }
    if not alert["endsAt"]:
        alert["endsAt"] = "0001-01-01T00:00:00Z"
    return observe(Alert.model_validate(alert), group_key="{}:{}", default_cluster="sim")


@contextmanager
def statements(store: SqlStore) -> Iterator[list[str]]:
    """The SQL the store sends to the alerts and incidents tables while the block runs."""
    seen: list[str] = []

    def note(conn: Any, cursor: Any, sql: str, *args: Any) -> None:
        if " alerts" in sql or " incidents" in sql:
            seen.append(sql)

    event.listen(store._engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(store._engine, "before_cursor_execute", note)


async def one_at_a_time(store: SqlStore, items: list[AlertObservation]) -> list[IntakeOutcome]:
    """Each alert as a payload of its own, one after another (each its own transaction)."""
    outcomes: list[IntakeOutcome] = []
    for item in items:
        outcomes += await store.ingest([item], now=NOW)
    return outcomes


async def snapshot(store: SqlStore) -> list[tuple[str, str, str]]:
    """Every alert as (fingerprint, status, the node of its incident), in a stable order."""
    rows = []
    for incident in await store.list_incidents(limit=10_000):
        for record in await store.alerts_for(incident.id):
            rows.append((record.fingerprint, record.status, incident.node or ""))
    return sorted(rows)


async def test_a_payload_decides_each_alert_as_one_at_a_time_would(database: Any) -> None:
    """New node, attach, repeat in the payload, duplicate, firing re-send of a resolved
    alert: one payload gives what its alerts sent one by one give, outcomes and rows."""
    batched = database.open()
    single = open_store("sqlite://")  # the reference: the per-alert path, in memory
    for store in (batched, single):
        await store.ingest([fired("old", "n1"), fired("gone", "n2")], now=NOW)
        await store.ingest([fired("gone", "n2", status="resolved")], now=NOW)
    payload = [
        fired("new", "n1"),  # attaches to n1's open incident
        fired("old", "n1"),  # stored before: a duplicate
        fired("gone", "n2"),  # resolved before: a stale re-send, ignored
        fired("fresh", "n3"),  # a node with no incident: opens one
        fired("fresh2", "n3"),  # the same payload's new incident: attaches
        fired("fresh", "n3"),  # repeated within the payload: a duplicate
    ]

    got = await batched.ingest(payload, now=NOW)
    try:
        want = await one_at_a_time(single, payload)
        reference = await snapshot(single)
    finally:
        await single.close()

    assert [o.kind for o in got] == [o.kind for o in want]
    assert [o.kind for o in got] == [
        IntakeKind.ATTACHED,
        IntakeKind.DUPLICATE,
        IntakeKind.IGNORED,
        IntakeKind.OPENED,
        IntakeKind.ATTACHED,
        IntakeKind.DUPLICATE,
    ]
    assert got[0].incident_id == got[1].incident_id
    assert got[3].incident_id == got[4].incident_id == got[5].incident_id
    assert await snapshot(batched) == reference
    old = [r for r in await batched.alerts_for(got[1].incident_id or "") if r.fingerprint == "old"]
    assert old[0].last_seen_at == NOW


async def test_a_storm_payload_is_a_handful_of_statements(database: Any) -> None:
    """100 alerts about 100 nodes: 2 reads and 2 inserts, not 4 statements per alert; sent
    again, 2 reads and 1 update."""
    store = database.open()
    payload = [fired(f"fp{i}", f"node-{i:03d}") for i in range(100)]

    with statements(store) as first:
        outcomes = await store.ingest(payload, now=NOW)
    with statements(store) as again:
        repeats = await store.ingest(payload, now=NOW + timedelta(minutes=1))

    assert {o.kind for o in outcomes} == {IntakeKind.OPENED}
    assert {o.kind for o in repeats} == {IntakeKind.DUPLICATE}
    assert len(first) == 4
    assert len(again) == 3
    assert database.scalar("select count(*) from alerts") == 100
    assert database.scalar("select count(*) from incidents") == 100


async def test_a_payload_larger_than_one_in_list_is_stored_once(database: Any) -> None:
    """1,200 alerts (IN lists are cut at 500) all land once and all repeat as duplicates."""
    store = database.open()
    payload = [fired(f"fp{i:04d}", f"node-{i % 300:03d}") for i in range(1200)]

    outcomes = await store.ingest(payload, now=NOW)
    repeats = await store.ingest(payload, now=NOW)

    assert sum(o.kind is IntakeKind.OPENED for o in outcomes) == 300
    assert sum(o.kind is IntakeKind.ATTACHED for o in outcomes) == 900
    assert {o.kind for o in repeats} == {IntakeKind.DUPLICATE}
    assert database.scalar("select count(*) from alerts") == 1200
    assert database.scalar("select count(*) from incidents") == 300


async def test_concurrent_payloads_share_commits_and_decide_as_if_one_after_another(
    database: Any,
) -> None:
    """30 webhook bodies at once, about the same node, the same alert sent by all of them
    plus one new alert each (a storm's shape): group commit writes them in fewer
    transactions than bodies, yet the outcomes are what one body after another gives:
    one incident opened, the repeated alert stored once, nothing lost."""
    store = database.open()
    commits: list[int] = []
    event.listen(store._engine, "commit", lambda conn: commits.append(1))
    payloads = [[fired("shared", "n1"), fired(f"own{i}", "n1")] for i in range(30)]

    results = await asyncio.gather(*(store.ingest(p, now=NOW) for p in payloads))

    kinds = [o.kind for outcomes in results for o in outcomes]
    assert kinds.count(IntakeKind.OPENED) == 1
    assert kinds.count(IntakeKind.DUPLICATE) == 29  # "shared" after its first time
    assert kinds.count(IntakeKind.ATTACHED) == 30
    assert len({o.incident_id for outcomes in results for o in outcomes}) == 1
    assert database.scalar("select count(*) from alerts") == 31
    assert database.scalar("select count(*) from incidents") == 1
    assert 1 <= len(commits) < len(payloads)


async def test_a_group_keeps_each_payloads_time_and_order_with_a_resolve_in_the_middle(
    database: Any,
) -> None:
    """Four bodies received a second apart and written in one transaction: read together,
    decided in order (the resolving body in its place), and every row carries the time of
    the body that wrote it, not the group's."""
    store = database.open()
    commits: list[int] = []
    event.listen(store._engine, "commit", lambda conn: commits.append(1))
    at = [NOW + timedelta(seconds=n) for n in range(4)]
    bodies = [
        [fired("a", "n1")],
        [fired("a", "n1"), fired("b", "n1")],
        [fired("a", "n1", status="resolved")],
        [fired("c", "n2")],
    ]

    sends = (store.ingest(body, now=t) for body, t in zip(bodies, at, strict=True))
    results = await asyncio.gather(*sends)

    assert len(commits) == 1  # one group
    assert [[o.kind for o in outcomes] for outcomes in results] == [
        [IntakeKind.OPENED],
        [IntakeKind.DUPLICATE, IntakeKind.ATTACHED],
        [IntakeKind.ALERT_RESOLVED],
        [IntakeKind.OPENED],
    ]
    n1, n2 = results[0][0].incident_id, results[3][0].incident_id
    assert n1 is not None
    assert n2 is not None
    assert n1 != n2
    rows = {a.fingerprint: a for a in await store.alerts_for(n1)}
    assert (rows["a"].status, rows["a"].received_at, rows["a"].last_seen_at) == (
        "resolved",
        at[0],
        at[2],
    )
    assert (rows["b"].received_at, rows["b"].last_seen_at) == (at[1], at[1])
    assert (await store.get_incident(n1)).updated_at == at[2]
    second = await store.get_incident(n2)
    assert (second.created_at, second.updated_at) == (at[3], at[3])


async def test_an_alert_stored_and_resolved_in_one_payload_leaves_its_incident_open(
    database: Any,
) -> None:
    """The incident has a firing alert from before; a payload adds a second and resolves it:
    the incident stays open (the first still fires), and resolving the first closes it."""
    store = database.open()
    [opened] = await store.ingest([fired("first", "n1")], now=NOW)
    later = NOW + timedelta(seconds=5)
    outcomes = await store.ingest(
        [fired("second", "n1"), fired("second", "n1", status="resolved")], now=later
    )

    assert [o.kind for o in outcomes] == [IntakeKind.ATTACHED, IntakeKind.ALERT_RESOLVED]
    incident = await store.get_incident(opened.incident_id or "")
    assert incident.is_open
    assert incident.updated_at == later
    [closed] = await store.ingest([fired("first", "n1", status="resolved")], now=later)
    assert closed.kind is IntakeKind.INCIDENT_RESOLVED
    assert not (await store.get_incident(opened.incident_id or "")).is_open


async def test_a_resolved_incident_and_a_new_firing_of_its_key_in_one_payload(
    database: Any,
) -> None:
    """The last alert resolves, then the problem fires again (a new startsAt) in the same
    payload: the first incident is resolved and a new one opens, as one after another."""
    store = database.open()
    [first] = await store.ingest([fired("a", "n1")], now=NOW)
    again = fired("a", "n1", startsAt=(T0 + timedelta(hours=1)).isoformat())
    outcomes = await store.ingest([fired("a", "n1", status="resolved"), again], now=NOW)

    assert [o.kind for o in outcomes] == [IntakeKind.INCIDENT_RESOLVED, IntakeKind.OPENED]
    assert outcomes[1].incident_id != first.incident_id
    assert not (await store.get_incident(first.incident_id or "")).is_open
    assert (await store.get_incident(outcomes[1].incident_id or "")).is_open


async def test_opened_and_resolved_outcomes_carry_their_incident_as_the_intake_left_it(
    store: SqlStore,
) -> None:
    """The follow-up of an opening or a resolution needs no read of its own: the outcome
    carries the incident, read inside the intake's transaction, equal to a later read."""
    opened, attached = await store.ingest(
        [fired("fp-open", "gpu-1"), fired("fp-more", "gpu-1", startsAt=NOW.isoformat())],
        now=NOW,
    )
    assert (opened.kind, attached.kind) == (IntakeKind.OPENED, IntakeKind.ATTACHED)
    assert opened.incident is not None
    assert opened.incident.id == opened.incident_id
    assert opened.incident == await store.get_incident(opened.incident_id)
    assert attached.incident is None  # nothing follows an attachment that needs it

    [gone] = await store.ingest([fired("fp-open", "gpu-1", status="resolved")], now=NOW)
    [last] = await store.ingest(
        [fired("fp-more", "gpu-1", status="resolved", startsAt=NOW.isoformat())], now=NOW
    )
    assert (gone.kind, gone.incident) == (IntakeKind.ALERT_RESOLVED, None)
    assert last.kind is IntakeKind.INCIDENT_RESOLVED
    assert last.incident is not None
    assert not last.incident.is_open
    assert last.incident == await store.get_incident(opened.incident_id)
