"""Intake decisions as a pure function: stored state and payloads in, outcomes and writes out,
with no store in sight."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

from gpubot.domain.incidents.alerts import Alert
from gpubot.domain.incidents.correlation import AlertObservation, observe
from gpubot.domain.incidents.intake import (
    FIRING,
    RESOLVED,
    IntakeKind,
    IntakeOutcome,
    IntakeState,
    IntakeSummary,
    StoredAlert,
    alert_key,
    decide,
)

T0 = datetime(2026, 11, 22, 1, 0, tzinfo=UTC)
NOW = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)


def alert(fp: str, node: str, *, status: str = FIRING, **labels: str) -> AlertObservation:
    return observe(
        Alert.model_validate(
            {
                "status": status,
                "labels": {
                    "alertname": "GPUXidError",
                    "cluster": "sim",
                    "Hostname": node,
                    **labels,
                },
                "annotations": {},
                "startsAt": T0.isoformat(),
                "endsAt": (T0 + timedelta(minutes=5)).isoformat()
                if status == RESOLVED
                else "0001-01-01T00:00:00Z",
                "fingerprint": fp,
            }
        ),
        group_key="{}:{}",
        default_cluster="sim",
    )


def ids() -> Any:
    counter = itertools.count(1)
    return lambda: f"inc-{next(counter)}"


def test_a_new_alert_opens_an_incident_and_the_next_about_the_same_node_attaches() -> None:
    state = IntakeState()
    [[first, second]], writes = decide(
        state, [([alert("a", "n1"), alert("b", "n1")], NOW)], new_id=ids()
    )

    assert (first.kind, second.kind) == (IntakeKind.OPENED, IntakeKind.ATTACHED)
    assert first.incident_id == second.incident_id == "inc-1"
    assert [n.id for n in writes.new_incidents] == ["inc-1"]
    assert [a.item.fingerprint for a in writes.new_alerts] == ["a", "b"]
    assert writes.touched == {"inc-1": NOW}
    assert state.open_incidents  # the state after the batch: the incident is open


def test_a_resend_is_a_duplicate_and_is_marked_seen_without_a_new_row() -> None:
    item = alert("a", "n1")
    state = IntakeState(
        alerts={alert_key(item): StoredAlert(FIRING, "inc-9", item.labels)},
        open_incidents={item.correlation_key: "inc-9"},
    )
    [[outcome]], writes = decide(state, [([item], NOW)], new_id=ids())

    assert (outcome.kind, outcome.incident_id) == (IntakeKind.DUPLICATE, "inc-9")
    assert writes.new_alerts == []
    assert writes.new_incidents == []
    assert writes.seen == {alert_key(item): NOW}


def test_a_resend_with_other_labels_is_a_conflict_that_names_the_difference() -> None:
    stored = alert("a", "n1", xid="79")
    state = IntakeState(alerts={alert_key(stored): StoredAlert(FIRING, "inc-9", stored.labels)})
    [[outcome]], _ = decide(state, [([alert("a", "n1", xid="48")], NOW)], new_id=ids())

    assert outcome.kind is IntakeKind.CONFLICT
    assert "xid: stored '79', sent '48'" in outcome.detail


def test_a_firing_resend_of_a_resolved_alert_is_ignored_and_writes_nothing() -> None:
    item = alert("a", "n1")
    state = IntakeState(alerts={alert_key(item): StoredAlert(RESOLVED, "inc-9", item.labels)})
    [[outcome]], writes = decide(state, [([item], NOW)], new_id=ids())

    assert outcome.kind is IntakeKind.IGNORED
    assert not (writes.seen)
    assert not (writes.new_alerts)
    assert not (writes.touched)
    assert not (writes.resolved_alerts)


def test_a_resolve_for_an_alert_never_seen_is_ignored() -> None:
    [[outcome]], writes = decide(IntakeState(), [([alert("a", "n1", status=RESOLVED)], NOW)])
    assert (outcome.kind, outcome.incident_id) == (IntakeKind.IGNORED, None)
    assert not writes.new_alerts


def test_resolving_one_of_two_firing_alerts_keeps_the_incident_and_the_last_resolves_it() -> None:
    a, b = alert("a", "n1"), alert("b", "n1")
    state = IntakeState(
        alerts={
            alert_key(a): StoredAlert(FIRING, "inc-9", a.labels),
            alert_key(b): StoredAlert(FIRING, "inc-9", b.labels),
        },
        open_incidents={a.correlation_key: "inc-9"},
        firing={"inc-9": {alert_key(a), alert_key(b)}},
    )
    later = NOW + timedelta(seconds=1)
    outcomes, writes = decide(
        state,
        [([alert("a", "n1", status=RESOLVED)], NOW), ([alert("b", "n1", status=RESOLVED)], later)],
    )

    assert [o[0].kind for o in outcomes] == [
        IntakeKind.ALERT_RESOLVED,
        IntakeKind.INCIDENT_RESOLVED,
    ]
    assert writes.resolved_incidents == {"inc-9": later}
    assert "inc-9" not in writes.touched  # the resolution writes updated_at itself
    assert set(writes.resolved_alerts) == {alert_key(a), alert_key(b)}
    assert state.open_incidents == {}


def test_a_duplicate_resolve_after_the_resolve_updates_one_write_not_two() -> None:
    a = alert("a", "n1")
    state = IntakeState(
        alerts={alert_key(a): StoredAlert(FIRING, "inc-9", a.labels)},
        firing={"inc-9": {alert_key(a)}},
    )
    later = NOW + timedelta(seconds=1)
    resolved = alert("a", "n1", status=RESOLVED)
    outcomes, writes = decide(state, [([resolved], NOW), ([resolved], later)])

    assert [o[0].kind for o in outcomes] == [IntakeKind.INCIDENT_RESOLVED, IntakeKind.DUPLICATE]
    assert writes.seen == {}
    assert writes.resolved_alerts[alert_key(a)][1] == later  # last seen: the later payload


def test_the_same_problem_firing_again_after_its_incident_resolved_opens_a_new_one() -> None:
    a = alert("a", "n1")
    state = IntakeState(
        alerts={alert_key(a): StoredAlert(FIRING, "inc-9", a.labels)},
        open_incidents={a.correlation_key: "inc-9"},
        firing={"inc-9": {alert_key(a)}},
    )
    again = alert("a2", "n1")
    [[resolved, opened]], writes = decide(
        state, [([alert("a", "n1", status=RESOLVED), again], NOW)], new_id=ids()
    )

    assert (resolved.kind, opened.kind) == (IntakeKind.INCIDENT_RESOLVED, IntakeKind.OPENED)
    assert opened.incident_id == "inc-1"
    assert writes.resolved_incidents == {"inc-9": NOW}


def test_each_payload_keeps_its_own_time() -> None:
    later = NOW + timedelta(seconds=3)
    _, writes = decide(
        IntakeState(), [([alert("a", "n1")], NOW), ([alert("b", "n1")], later)], new_id=ids()
    )
    assert [a.at for a in writes.new_alerts] == [NOW, later]
    assert writes.new_incidents[0].at == NOW
    assert writes.touched == {"inc-1": later}


def test_the_webhook_answer_counts_each_kind_and_leaves_out_the_absent() -> None:
    summary = IntakeSummary(
        (
            IntakeOutcome("a", IntakeKind.OPENED, "inc-1"),
            IntakeOutcome("b", IntakeKind.ATTACHED, "inc-1"),
            IntakeOutcome("c", IntakeKind.ATTACHED, "inc-1"),
            IntakeOutcome("d", IntakeKind.REJECTED, None, "bad label"),
        )
    )
    assert summary.count(IntakeKind.ATTACHED) == 2
    assert summary.count(IntakeKind.DUPLICATE) == 0
    assert summary.as_json() == {"opened": 1, "attached": 2, "rejected": 1}
