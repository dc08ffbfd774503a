"""SqlStore against a SQLite file and real PostgreSQL: intake, runs, approvals, audit."""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from gpubot.backends.store import SqlStore, open_store
from gpubot.backends.store.database import create_store_engine
from gpubot.domain.control.approvals import ApprovalRequest, ApprovalStatus, Vote
from gpubot.domain.control.audit import AuditDraft
from gpubot.domain.incidents.alerts import Alert
from gpubot.domain.incidents.correlation import AlertObservation, IncidentStatus, observe
from gpubot.domain.incidents.intake import IntakeKind
from gpubot.domain.runbooks.runs import Run, RunStatus, StepState, StepStatus
from gpubot.errors import ConfigError, GpubotError, NotFoundError

if TYPE_CHECKING:
    from tests.integration.conftest import Database

T0 = datetime(2026, 11, 22, 1, 39, 20, 294642, tzinfo=UTC)
NOW = datetime(2026, 11, 22, 1, 40, 0, tzinfo=UTC)
GROUP_KEY = '{}:{alertname="GPUHighTemperature", cluster="gpu-prod-1"}'


def observation(
    *,
    fingerprint: str = "9c94cb2fda6e3cd9",
    status: str = "firing",
    node: str = "gpu-node-07",
    gpu: str = "3",
    alertname: str = "GPUHighTemperature",
    starts_at: datetime = T0,
    ends_at: datetime | None = None,
) -> AlertObservation:
    """One alert shaped like tests/fixtures/alertmanager/alertmanager_firing.json."""
    alert: dict[str, Any] = {
        "status": status,
        "labels": {
            "Hostname": node,
            "alertname": alertname,
            "cluster": "gpu-prod-1",
            "gpu": gpu,
            "namespace": "ml-train",
            "pod": "trainer-0",
            "severity": "warning",
        },
        "annotations": {
            "description": "DCGM_FI_DEV_GPU_TEMP > 85 for 5m",
            "summary": f"GPU {gpu} on {node} is at 91C",
        },
        "startsAt": starts_at.isoformat(),
        "endsAt": (ends_at.isoformat() if ends_at else "0001-01-01T00:00:00Z"),
        "generatorURL": "http://127.0.0.1:19090/graph?g0.expr=DCGM_FI_DEV_GPU_TEMP+%3E+85",
        "fingerprint": fingerprint,
    }
    return observe(Alert.model_validate(alert), group_key=GROUP_KEY, default_cluster="sim")


def resolved(item: AlertObservation) -> AlertObservation:
    return replace(item, status="resolved", ends_at=item.starts_at + timedelta(minutes=7))


def make_run(*, incident_id: str | None, run_id: str = "run-0000000001", **over: Any) -> Run:
    fields: dict[str, Any] = {
        "id": run_id,
        "runbook": "gpu-thermal",
        "incident_id": incident_id,
        "cluster": "gpu-prod-1",
        "target": "gpu-node-07",
        "requested_by": "alertmanager",
        "status": RunStatus.RUNNING,
        "dry_run": False,
        "context": {"alert": {"labels": {"Hostname": "gpu-node-07"}}, "attempt": 1},
        "created_at": NOW,
        "updated_at": NOW,
    }
    fields.update(over)
    return Run(**fields)


def make_steps(run_id: str) -> list[StepState]:
    return [
        StepState(run_id=run_id, step_id="cordon", position=0),
        StepState(run_id=run_id, step_id="cap-power", position=1),
    ]


def draft(n: int, **over: Any) -> AuditDraft:
    fields: dict[str, Any] = {
        "ts": NOW + timedelta(seconds=n, microseconds=123457),
        "actor": "system",
        "kind": "step.finished",
        "incident_id": "inc-0000000001",
        "run_id": "run-0000000001",
        "step": "cordon",
        "action": "node.cordon",
        "target": "gpu-node-07",
        "args": {"node": "gpu-node-07", "n": n},
        "result": {"ok": True, "pods": ["a", "b"]},
        "reason": "alert 9c94cb2fda6e3cd9",
    }
    fields.update(over)
    return AuditDraft(**fields)


# Intake


async def test_same_payload_twice_is_one_incident(store: SqlStore) -> None:
    """Alertmanager retries and repeat_interval re-sends never open a second incident."""
    payload = [observation(fingerprint="a1"), observation(fingerprint="b2", gpu="4")]
    first = await store.ingest(payload, now=NOW)
    second = await store.ingest(payload, now=NOW + timedelta(minutes=1))

    assert [o.kind for o in first] == [IntakeKind.OPENED, IntakeKind.ATTACHED]
    assert [o.kind for o in second] == [IntakeKind.DUPLICATE, IntakeKind.DUPLICATE]
    assert len({o.incident_id for o in first + second}) == 1
    assert len(await store.list_incidents()) == 1
    records = await store.alerts_for(first[0].incident_id or "")
    assert [r.last_seen_at for r in records] == [NOW + timedelta(minutes=1)] * 2


async def test_alerts_about_one_node_share_an_incident(store: SqlStore) -> None:
    """Two fingerprints with the same cluster/alertname/node attach to one incident."""
    [opened] = await store.ingest([observation(fingerprint="a1", gpu="3")], now=NOW)
    [attached] = await store.ingest([observation(fingerprint="b2", gpu="5")], now=NOW)
    [other] = await store.ingest([observation(fingerprint="c3", node="gpu-node-08")], now=NOW)

    assert opened.kind is IntakeKind.OPENED
    assert attached.kind is IntakeKind.ATTACHED
    assert attached.incident_id == opened.incident_id
    assert other.kind is IntakeKind.OPENED
    assert other.incident_id != opened.incident_id
    records = await store.alerts_for(opened.incident_id or "")
    assert [r.fingerprint for r in records] == ["a1", "b2"]


async def test_incident_round_trips_its_fields(store: SqlStore) -> None:
    """Everything the notifier and planner read comes back as written, timestamps in UTC."""
    item = observation()
    [outcome] = await store.ingest([item], now=NOW)
    incident = await store.get_incident(outcome.incident_id or "")

    assert incident.key == "gpu-prod-1/GPUHighTemperature/gpu-node-07"
    assert incident.status is IncidentStatus.OPEN
    assert (incident.cluster, incident.node, incident.severity) == (
        "gpu-prod-1",
        "gpu-node-07",
        "warning",
    )
    assert incident.summary == "GPU 3 on gpu-node-07 is at 91C"
    assert incident.labels == dict(item.labels)
    assert incident.annotations == dict(item.annotations)
    assert incident.generator_url == item.generator_url
    assert incident.created_at == NOW
    assert incident.created_at.utcoffset() == timedelta(0)
    [record] = await store.alerts_for(incident.id)
    assert record.starts_at == T0
    assert record.starts_at.tzinfo is not None
    assert record.ends_at is None


async def test_incident_resolves_when_its_last_alert_resolves(store: SqlStore) -> None:
    """One resolved alert of two leaves the incident open; the second resolves it."""
    a, b = observation(fingerprint="a1"), observation(fingerprint="b2", gpu="4")
    [opened, _] = await store.ingest([a, b], now=NOW)
    later = NOW + timedelta(minutes=10)

    [first] = await store.ingest([resolved(a)], now=later)
    assert first.kind is IntakeKind.ALERT_RESOLVED
    assert (await store.get_incident(opened.incident_id or "")).is_open

    [second] = await store.ingest([resolved(b)], now=later)
    assert second.kind is IntakeKind.INCIDENT_RESOLVED
    incident = await store.get_incident(opened.incident_id or "")
    assert incident.status is IncidentStatus.RESOLVED
    assert incident.resolved_at == later
    records = await store.alerts_for(incident.id)
    assert {r.status for r in records} == {"resolved"}
    assert records[0].ends_at == a.starts_at + timedelta(minutes=7)
    assert await store.list_incidents(status=IncidentStatus.OPEN) == []


async def test_firing_resend_after_resolution_is_ignored(store: SqlStore) -> None:
    """A stale firing re-send of a resolved alert never reopens its incident."""
    item = observation()
    [opened] = await store.ingest([item], now=NOW)
    await store.ingest([resolved(item)], now=NOW + timedelta(minutes=1))

    [replay] = await store.ingest([item], now=NOW + timedelta(minutes=2))

    assert replay.kind is IntakeKind.IGNORED
    incident = await store.get_incident(opened.incident_id or "")
    assert incident.status is IncidentStatus.RESOLVED
    assert len(await store.list_incidents()) == 1
    # The same problem firing again (a new startsAt) is a new incident.
    [again] = await store.ingest([observation(starts_at=T0 + timedelta(hours=1))], now=NOW)
    assert again.kind is IntakeKind.OPENED
    assert again.incident_id != opened.incident_id


async def test_resolve_for_unknown_alert_is_ignored(store: SqlStore) -> None:
    """A resolve for an alert we never saw firing stores nothing."""
    [outcome] = await store.ingest([resolved(observation())], now=NOW)
    assert outcome.kind is IntakeKind.IGNORED
    assert outcome.incident_id is None
    assert await store.list_incidents() == []


async def test_concurrent_ingest_of_one_alert_opens_one_incident(database: Database) -> None:
    """8 concurrent deliveries via two replicas: one incident, one alert row."""
    replicas = [database.open(), database.open()]
    item = observation()

    results = await asyncio.gather(*(replicas[i % 2].ingest([item], now=NOW) for i in range(8)))

    kinds = sorted(outcome.kind for [outcome] in results)
    assert kinds == [IntakeKind.DUPLICATE] * 7 + [IntakeKind.OPENED]
    assert database.scalar("select count(*) from incidents") == 1
    assert database.scalar("select count(*) from alerts") == 1


async def test_concurrent_alerts_for_one_node_open_one_incident(database: Database) -> None:
    """8 different alerts about one node arriving at once share a single incident."""
    replicas = [database.open(), database.open()]

    results = await asyncio.gather(
        *(
            replicas[i % 2].ingest([observation(fingerprint=f"fp{i}", gpu=str(i))], now=NOW)
            for i in range(8)
        )
    )

    kinds = sorted(outcome.kind for [outcome] in results)
    assert kinds == [IntakeKind.ATTACHED] * 7 + [IntakeKind.OPENED]
    assert database.scalar("select count(*) from incidents") == 1
    assert database.scalar("select count(*) from alerts") == 8


async def test_list_incidents_newest_first(store: SqlStore) -> None:
    """The incident list shows the newest first and honours status and limit."""
    for i in range(3):
        await store.ingest(
            [observation(fingerprint=f"fp{i}", node=f"gpu-node-0{i}")],
            now=NOW + timedelta(minutes=i),
        )
    await store.ingest([resolved(observation(fingerprint="fp0", node="gpu-node-00"))], now=NOW)

    nodes = [i.node for i in await store.list_incidents()]
    assert nodes == ["gpu-node-02", "gpu-node-01", "gpu-node-00"]
    open_nodes = [i.node for i in await store.list_incidents(status=IncidentStatus.OPEN)]
    assert open_nodes == ["gpu-node-02", "gpu-node-01"]
    assert len(await store.list_incidents(limit=1)) == 1


# Runs


async def test_create_run_is_idempotent_per_incident_and_runbook(store: SqlStore) -> None:
    """A second trigger for the same incident and runbook returns the first run unchanged."""
    first, created = await store.create_run(
        make_run(incident_id="inc-1", run_id="run-1"), make_steps("run-1")
    )
    dup = make_run(incident_id="inc-1", run_id="run-2")
    again, created_again = await store.create_run(dup, make_steps("run-2"))

    assert created
    assert not created_again
    assert again == first
    assert len(await store.list_runs(incident_id="inc-1")) == 1
    assert await store.steps("run-2") == []
    with pytest.raises(NotFoundError):
        await store.get_run("run-2")


async def test_runs_without_incident_always_insert(store: SqlStore) -> None:
    """Slash-command runs (no incident) are never deduplicated."""
    for n in range(2):
        _, created = await store.create_run(make_run(incident_id=None, run_id=f"run-{n}"), [])
        assert created
    assert len(await store.list_runs(runbook="gpu-thermal")) == 2


async def test_concurrent_create_run_creates_one(database: Database) -> None:
    """Two replicas starting the same runbook for one incident at once: one run wins."""
    replicas = [database.open(), database.open()]
    results = await asyncio.gather(
        *(
            replicas[n % 2].create_run(
                make_run(incident_id="inc-1", run_id=f"run-{n}"), make_steps(f"run-{n}")
            )
            for n in range(8)
        )
    )
    assert sorted(created for _, created in results) == [False] * 7 + [True]
    assert len({run.id for run, _ in results}) == 1
    assert database.scalar("select count(*) from runs") == 1
    assert database.scalar("select count(*) from steps") == 2


async def test_run_round_trip_update_and_filters(store: SqlStore) -> None:
    """get/update/list_runs return what was stored; filters and oldest-first order hold."""
    run = make_run(incident_id="inc-1", run_id="run-a")
    await store.create_run(run, make_steps("run-a"))
    await store.create_run(
        make_run(
            incident_id=None,
            run_id="run-b",
            runbook="oom-triage",
            target="gpu-node-09",
            created_at=NOW + timedelta(hours=1),
        ),
        [],
    )
    assert await store.get_run("run-a") == run

    later = NOW + timedelta(minutes=5)
    updated = await store.update_run(
        "run-a", status=RunStatus.WAITING_APPROVAL, note="needs approval", now=later
    )
    assert updated == replace(
        run, status=RunStatus.WAITING_APPROVAL, note="needs approval", updated_at=later
    )
    assert await store.get_run("run-a") == updated

    assert [r.id for r in await store.list_runs()] == ["run-a", "run-b"]
    waiting = await store.list_runs(statuses=[RunStatus.WAITING_APPROVAL])
    assert [r.id for r in waiting] == ["run-a"]
    assert await store.list_runs(statuses=[]) == []
    assert [r.id for r in await store.list_runs(target="gpu-node-09")] == ["run-b"]
    assert [r.id for r in await store.list_runs(since=NOW + timedelta(minutes=1))] == ["run-b"]
    assert [r.id for r in await store.list_runs(runbook="gpu-thermal")] == ["run-a"]


async def test_steps_are_ordered_and_upserted(store: SqlStore) -> None:
    """save_step inserts a new step and overwrites an existing one by (run_id, step_id)."""
    await store.create_run(make_run(incident_id=None, run_id="run-a"), make_steps("run-a"))
    done = StepState(
        run_id="run-a",
        step_id="cordon",
        position=0,
        status=StepStatus.SUCCEEDED,
        attempts=1,
        args={"node": "gpu-node-07"},
        output={"cordoned": True, "pods": 3},
        started_at=NOW,
        finished_at=NOW + timedelta(seconds=2),
    )
    await store.save_step(done)
    extra = StepState(run_id="run-a", step_id="notify", position=2, error="boom")
    await store.save_step(extra)

    assert await store.steps("run-a") == [
        done,
        StepState(run_id="run-a", step_id="cap-power", position=1),
        extra,
    ]
    # The executor's read before each step: the same run and steps, in one transaction.
    assert await store.run_with_steps("run-a") == (
        await store.get_run("run-a"),
        await store.steps("run-a"),
    )


async def test_combined_reads_match_the_reads_they_replace(store: SqlStore) -> None:
    """The one-transaction reads the engine makes per alert (run_state, runs_on_target,
    incident_with_runs, incident_trail) answer what the separate reads they replace answer."""
    [opened] = await store.ingest([observation(fingerprint="a1")], now=NOW)
    incident_id = opened.incident_id
    assert incident_id is not None
    old = make_run(incident_id=incident_id, run_id="run-old", status=RunStatus.HELD)
    new = make_run(
        incident_id=None,
        run_id="run-new",
        status=RunStatus.SUCCEEDED,
        created_at=NOW + timedelta(hours=1),
    )
    other = make_run(incident_id=None, run_id="run-other", target="gpu-node-09")
    for run in (old, new, other):
        await store.create_run(run, make_steps(run.id))
    await store.append(draft(1, incident_id=incident_id, run_id="run-old"))
    await store.append(draft(2, incident_id="inc-elsewhere", run_id="run-other"))

    # Before each step: the run, its steps, and whether its incident is open.
    assert await store.run_state("run-old") == (old, make_steps("run-old"), True)
    assert await store.run_state("run-new") == (new, make_steps("run-new"), None)
    # The attempt cap's window (only run-new is that recent) and the node's active runs
    # (run-old is held, however old).
    recent, active = await store.runs_on_target(
        runbook="gpu-thermal",
        target="gpu-node-07",
        since=NOW + timedelta(minutes=1),
        active=[RunStatus.HELD],
    )
    assert ([r.id for r in recent], [r.id for r in active]) == (["run-new"], ["run-old"])
    # After a run: the incident, its runs and its alerts.
    incident, runs, alerts = await store.incident_with_runs(incident_id)
    assert incident == await store.get_incident(incident_id)
    assert runs == await store.list_runs(incident_id=incident_id) == [old]
    assert alerts == await store.alerts_for(incident_id)
    assert [a.fingerprint for a in alerts] == ["a1"]
    # A run's end: the incident's events and the head, as events() and head() read them.
    events, head = await store.incident_trail(incident_id)
    assert events == await store.events(incident_id=incident_id)
    assert [e.run_id for e in events] == ["run-old"]
    assert head == await store.head()
    assert head is not None
    assert head.seq == 2


async def test_writes_that_read_back_answer_what_the_reads_after_them_answer(
    store: SqlStore,
) -> None:
    """create_run_read, save_step_read and end_run each write as their plain form does and
    read, in the same transaction, what run_state (or incident_trail) would read next."""
    [opened] = await store.ingest([observation(fingerprint="a1")], now=NOW)
    incident_id = opened.incident_id
    assert incident_id is not None

    def mine(n: int) -> AuditDraft:
        return draft(n, incident_id=incident_id, run_id="run-a")

    run = make_run(incident_id=incident_id, run_id="run-a")
    view, created = await store.create_run_read(run, make_steps("run-a"), audit=mine(1))
    assert created
    assert view == await store.run_state("run-a") == (run, make_steps("run-a"), True)
    # The incident's second run of the same runbook: nothing written, the first one's view.
    twin = make_run(incident_id=incident_id, run_id="run-b")
    again, created = await store.create_run_read(twin, make_steps("run-b"), audit=mine(2))
    assert not created
    assert again == view
    assert [e.seq for e in await store.events()] == [1]

    [first, *_] = await store.steps("run-a")
    running = replace(first, status=StepStatus.RUNNING, attempts=1, started_at=NOW)
    seen = await store.save_step_read(running, audit=mine(2))
    assert seen == await store.run_state("run-a")
    assert seen.steps[0] == running
    # The incident resolves: the next write's view says so.
    await store.ingest([observation(fingerprint="a1", status="resolved")], now=NOW)
    done = replace(running, status=StepStatus.SUCCEEDED, finished_at=NOW)
    seen = await store.save_step_read(done, audit=mine(3))
    assert seen == await store.run_state("run-a")
    assert seen.incident_open is False

    ended, events, head = await store.end_run(
        "run-a", status=RunStatus.SUCCEEDED, note="", now=NOW, audit=mine(4)
    )
    assert ended == await store.get_run("run-a")
    assert ended.status is RunStatus.SUCCEEDED
    assert (events, head) == await store.incident_trail(incident_id)
    assert [e.seq for e in events] == [1, 2, 3, 4]
    assert await store.verify() == []
    # Without an incident: no events, the head still.
    loose = make_run(incident_id=None, run_id="run-c")
    await store.create_run(loose, make_steps("run-c"))
    _run, events, head = await store.end_run(
        "run-c", status=RunStatus.FAILED, note="x", now=NOW, audit=draft(5)
    )
    assert events == []
    assert head == await store.head()


async def test_a_created_runs_view_is_what_a_read_of_its_rows_gives(store: SqlStore) -> None:
    """create_run_read answers a run it created from what it wrote, without reading it back:
    that answer equals a later read even where the rows change what was written (times in
    another zone come back in UTC, tuples in JSON come back as lists, microseconds kept)."""
    [opened] = await store.ingest([observation(fingerprint="a1")], now=NOW)
    assert opened.incident_id is not None
    east = NOW.astimezone(timezone(timedelta(hours=9))) + timedelta(microseconds=123456)
    run = make_run(
        incident_id=opened.incident_id,
        run_id="run-tz",
        context={"nodes": ("gpu-node-07", "gpu-node-08"), "limit": 250.5, "ok": True},
        created_at=east,
        updated_at=east,
    )
    steps = [replace(s, args={"watts": (250, 300)}, started_at=east) for s in make_steps("run-tz")]
    view, created = await store.create_run_read(
        run, steps, audit=draft(1, incident_id=opened.incident_id, run_id="run-tz")
    )
    assert created
    read = await store.run_state("run-tz")
    assert view == read
    assert view.run.created_at.utcoffset() == timedelta(0)
    assert view.run.context["nodes"] == ["gpu-node-07", "gpu-node-08"]
    assert view.steps[0].args == {"watts": [250, 300]}
    # A run without an incident: no incident to be open.
    loose = make_run(incident_id=None, run_id="run-loose")
    view, _ = await store.create_run_read(loose, make_steps("run-loose"), audit=draft(2))
    assert view == await store.run_state("run-loose")
    assert view.incident_open is None


async def test_runs_on_target_gives_a_recent_active_run_in_both_lists(store: SqlStore) -> None:
    """One read answers both questions: a run created in the window and still active is in
    both lists; an old finished run in neither; another runbook's or node's in neither."""
    runs = [
        make_run(incident_id=None, run_id="run-old-done", status=RunStatus.SUCCEEDED),
        make_run(
            incident_id=None,
            run_id="run-new-held",
            status=RunStatus.HELD,
            created_at=NOW + timedelta(hours=1),
        ),
        make_run(incident_id=None, run_id="run-old-held", status=RunStatus.HELD),
        make_run(incident_id=None, run_id="run-other-book", runbook="gpu-xid79"),
        make_run(incident_id=None, run_id="run-other-node", target="gpu-node-09"),
    ]
    for run in runs:
        await store.create_run(run, make_steps(run.id))
    recent, active = await store.runs_on_target(
        runbook="gpu-thermal",
        target="gpu-node-07",
        since=NOW + timedelta(minutes=1),
        active=[RunStatus.HELD, RunStatus.RUNNING],
    )
    assert [r.id for r in recent] == ["run-new-held"]
    assert [r.id for r in active] == ["run-old-held", "run-new-held"]
    # No active status asked for: only the window.
    recent, active = await store.runs_on_target(
        runbook="gpu-thermal", target="gpu-node-07", since=NOW - timedelta(days=1), active=[]
    )
    assert [r.id for r in recent] == ["run-old-done", "run-old-held", "run-new-held"]
    assert active == []


async def test_ending_an_unknown_run_is_not_found(store: SqlStore) -> None:
    with pytest.raises(NotFoundError):
        await store.update_run("run-nowhere", status=RunStatus.FAILED, note="", now=NOW)


async def test_a_rehearsal_keeps_nothing(store: SqlStore) -> None:
    """rehearse() runs an alert's run's statements in a transaction it rolls back: no run,
    step or event is kept, the chain's head is where it was and the chain verifies; a store
    call after it works as before."""
    await store.append(draft(1))
    head = await store.head()
    await store.rehearse(now=NOW)
    assert await store.list_runs() == []
    assert [e.seq for e in await store.events()] == [1]
    assert await store.head() == head
    assert await store.verify() == []
    assert (await store.append(draft(2))).seq == 2


# Approvals


def make_approval(**over: Any) -> ApprovalRequest:
    fields: dict[str, Any] = {
        "id": "apr-abc",
        "run_id": "run-a",
        "step_id": "drain",
        "level": "two-person",
        "group": "gpu-oncall",
        "requested_by": "U1",
        "created_at": NOW,
        "expires_at": NOW + timedelta(minutes=30),
    }
    fields.update(over)
    return ApprovalRequest(**fields)


async def test_replace_approval_is_compare_and_set(store: SqlStore) -> None:
    """Two clicks computed from the same stored state: only the first one is kept."""
    await store.create_run(make_run(incident_id=None, run_id="run-a"), [])
    request = make_approval()
    await store.create_approval(request)
    assert await store.get_approval("apr-abc") == request

    vote_at = NOW + timedelta(minutes=1, microseconds=5)
    alice = replace(request, votes=(Vote(user="U2", decision="approve", at=vote_at),))
    bob = replace(request, votes=(Vote(user="U3", decision="deny", at=vote_at),))
    assert await store.replace_approval(alice, expected_votes=0) is True
    assert await store.replace_approval(bob, expected_votes=0) is False
    assert await store.get_approval("apr-abc") == alice

    done = replace(
        alice,
        status=ApprovalStatus.APPROVED,
        votes=(*alice.votes, Vote(user="U4", decision="approve", at=vote_at)),
    )
    assert await store.replace_approval(done, expected_votes=1) is True
    # Decided requests never change again, even with the right vote count.
    assert (
        await store.replace_approval(replace(done, status=ApprovalStatus.EXPIRED), expected_votes=2)
        is False
    )
    assert await store.approvals_for("run-a") == [done]


async def test_concurrent_votes_one_wins(database: Database) -> None:
    """Simultaneous clicks on two replicas: exactly one compare-and-set succeeds."""
    replicas = [database.open(), database.open()]
    await replicas[0].create_run(make_run(incident_id=None, run_id="run-a"), [])
    await replicas[0].create_approval(make_approval(level="required"))
    clicks = [
        replace(
            make_approval(level="required"),
            status=ApprovalStatus.APPROVED,
            votes=(Vote(user=f"U{n}", decision="approve", at=NOW),),
        )
        for n in range(8)
    ]
    won = await asyncio.gather(
        *(replicas[n % 2].replace_approval(c, expected_votes=0) for n, c in enumerate(clicks))
    )
    assert sorted(won) == [False] * 7 + [True]
    stored = await replicas[1].get_approval("apr-abc")
    assert stored == clicks[won.index(True)]


# Audit


async def test_audit_chain_of_50_verifies(store: SqlStore) -> None:
    """50 appended events read back in order and the chain verifies clean."""
    appended = [await store.append(draft(n)) for n in range(50)]
    events = await store.events()
    assert events == appended
    assert [e.seq for e in events] == list(range(1, 51))
    assert await store.verify() == []
    assert await store.events(incident_id="inc-none") == []


async def test_audit_timestamps_round_trip_exactly(database: Database) -> None:
    """A non-UTC ts with microseconds, and non-JSON values, hash the same after reading back."""
    store = database.open(audit_key=b"secret")
    plus_two = timezone(timedelta(hours=2))
    ts = datetime(2026, 11, 22, 3, 39, 20, 294642, tzinfo=plus_two)
    odd = draft(1, ts=ts, args={"when": NOW, "ids": (1, 2)}, result={"ok": 1.5})

    event = await store.append(odd)
    [read] = await store.events()

    assert read == event
    assert read.ts == ts
    assert read.ts.isoformat() == "2026-11-22T01:39:20.294642+00:00"
    assert read.args == {"when": str(NOW), "ids": [1, 2]}
    assert await store.verify() == []
    # Verifying with the wrong key (or none) flags every row: the HMAC really is keyed.
    unkeyed = database.open()
    assert [p.seq for p in await unkeyed.verify()] == [1]


async def test_concurrent_appends_keep_one_chain(database: Database) -> None:
    """Appends from two replicas at once still form one gapless chain."""
    replicas = [database.open(), database.open()]
    events = await asyncio.gather(*(replicas[n % 2].append(draft(n)) for n in range(20)))
    assert sorted(e.seq for e in events) == list(range(1, 21))
    assert await replicas[0].verify() == []


async def test_edited_row_is_named_by_verify(database: Database, store: SqlStore) -> None:
    """Changing one row's result with raw SQL makes verify name exactly that seq."""
    for n in range(50):
        await store.append(draft(n))
    assert database.execute("update audit set result = '{\"ok\": false}' where seq = 17") == 1

    problems = await store.verify()

    assert [(p.seq, p.problem) for p in problems] == [
        (17, "contents were changed after it was written")
    ]


async def test_deleted_middle_row_is_reported(database: Database, store: SqlStore) -> None:
    """Deleting a row in the middle of the chain is reported at the gap."""
    for n in range(50):
        await store.append(draft(n))
    database.execute("delete from audit where seq = 25")

    problems = await store.verify()

    assert any(p.seq == 26 and "25 deleted" in p.problem for p in problems)


async def test_deleted_last_row_is_reported(database: Database, store: SqlStore) -> None:
    """Deleting the newest row is caught by the chain head, not by the links."""
    for n in range(50):
        await store.append(draft(n))
    database.execute("delete from audit where seq = 50")

    problems = await store.verify()

    assert len(problems) == 1
    assert problems[0].seq is None
    assert problems[0].problem.startswith("head says seq 50 / hash ")
    assert problems[0].problem.endswith(", last event is seq 49: events cut from the end")


async def test_deleted_head_is_reported(database: Database, store: SqlStore) -> None:
    """Deleting the chain head is reported by verify and stops further appends."""
    for n in range(3):
        await store.append(draft(n))
    database.execute("delete from audit_head")

    problems = await store.verify()

    assert [(p.seq, p.problem) for p in problems] == [
        (None, "chain head missing while 3 events exist (the audit_head row was deleted)")
    ]
    with pytest.raises(GpubotError, match="audit_head row is missing"):
        await store.append(draft(4))


async def test_audit_events_filter_by_action_and_time(store: SqlStore) -> None:
    """The idle report reads only reclamations within its span, not the whole trail."""
    for n in range(4):
        await store.append(draft(n, action="workload.reclaim" if n % 2 else "node.cordon"))
    reclaims = await store.events(action="workload.reclaim")
    assert [e.seq for e in reclaims] == [2, 4]
    recent = await store.events(action="workload.reclaim", since=NOW + timedelta(seconds=2))
    assert [e.seq for e in recent] == [4]


async def test_step_state_and_its_audit_event_commit_together(
    database: Database, store: SqlStore
) -> None:
    """save_step(state, audit=event) is one transaction: both land, chained; and when the
    append fails (here: the chain head was deleted) the step's new state is not kept either,
    so a crash or an error never leaves a step recorded without its audit event."""
    await store.create_run(make_run(incident_id=None, run_id="run-a"), make_steps("run-a"))
    [first, *_] = await store.steps("run-a")
    running = replace(first, status=StepStatus.RUNNING, attempts=1, started_at=NOW)
    await store.save_step(running, audit=draft(1))
    assert (await store.steps("run-a"))[0] == running
    [event] = await store.events()
    assert (event.seq, event.kind) == (1, draft(1).kind)
    assert await store.verify() == []

    database.execute("delete from audit_head")
    done = replace(running, status=StepStatus.SUCCEEDED, finished_at=NOW)
    with pytest.raises(GpubotError, match="audit_head row is missing"):
        await store.save_step(done, audit=draft(2))
    assert (await store.steps("run-a"))[0] == running  # rolled back with the failed append
    assert len(await store.events()) == 1


# Lookups and lifecycle


async def test_unknown_ids_raise_not_found(store: SqlStore) -> None:
    """Unknown incident, run and approval ids raise NotFoundError naming the id."""
    with pytest.raises(NotFoundError, match="no incident inc-missing"):
        await store.get_incident("inc-missing")
    with pytest.raises(NotFoundError, match="no run run-missing"):
        await store.get_run("run-missing")
    with pytest.raises(NotFoundError, match="no run run-missing"):
        await store.update_run("run-missing", status=RunStatus.FAILED, note="", now=NOW)
    with pytest.raises(NotFoundError, match="no approval apr-missing"):
        await store.get_approval("apr-missing")


async def test_reopening_keeps_data(database: Database, store: SqlStore) -> None:
    """open_store on an existing database creates nothing new and keeps the chain head."""
    await store.ingest([observation()], now=NOW)
    await store.append(draft(1))
    await store.close()

    reopened = database.open()

    assert len(await reopened.list_incidents()) == 1
    event = await reopened.append(draft(2))
    assert event.seq == 2
    assert await reopened.verify() == []


async def test_memory_sqlite_is_shared_across_threads() -> None:
    """sqlite:// (tests, demos) is one database for every worker thread, not one per thread."""
    store = open_store("sqlite://")
    try:
        await asyncio.gather(*(store.append(draft(n)) for n in range(10)))
        await store.ingest([observation()], now=NOW)
        assert len(await store.events()) == 10
        assert await store.verify() == []
        assert len(await store.list_incidents()) == 1
    finally:
        await store.close()


@pytest.mark.parametrize("write", [True, False])
def test_sqlite_writes_hold_the_write_lock_from_their_begin(tmp_path: Path, write: bool) -> None:
    """On SQLite a store write takes the database's write lock at its BEGIN (BEGIN
    IMMEDIATE), before its first statement, so it waits out another process's write rather
    than failing later on a lock upgrade; a read does not take it. The store begins its own
    transactions, and also does so on an engine that has the begin event."""
    path = tmp_path / "lock.db"
    for engine in (
        create_store_engine(f"sqlite:///{path}", begin_event=False),
        create_store_engine(f"sqlite:///{path}"),
    ):
        store = SqlStore(engine=engine)
        store.prepare()
        seen: list[str] = []

        def inside(conn: Any, seen: list[str] = seen) -> None:
            other = sqlite3.connect(path, timeout=0, isolation_level=None)
            try:
                other.execute("BEGIN IMMEDIATE")
                other.execute("ROLLBACK")
                seen.append("free")
            except sqlite3.OperationalError as exc:
                seen.append(str(exc))
            finally:
                other.close()

        store._transact(inside, write=write)
        assert seen == (["database is locked"] if write else ["free"])
        store.dispose()


def test_unreachable_database_is_one_line_config_error(tmp_path: Path) -> None:
    """A store that cannot be opened fails with a ConfigError naming the URL, not a traceback."""
    with pytest.raises(
        ConfigError, match=r"store.url: cannot open postgresql\+psycopg://u:\*\*\*@"
    ):
        open_store("postgresql://u:secret@127.0.0.1:1/nowhere")
    with pytest.raises(ConfigError, match="unsupported database 'mysql'"):
        open_store("mysql://u@127.0.0.1/db")
    with pytest.raises(ConfigError, match="schema"):
        open_store(f"sqlite:///{tmp_path / 'g.db'}", schema="t_x")
