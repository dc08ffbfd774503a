"""Escalation from a GPU's history (pure): reset, reboot, service, diagnostics, application."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import count
from typing import Any

import pytest

from gpubot.domain.gpus.escalation import EscalationPolicy, decide
from gpubot.domain.gpus.ledger import (
    GpuEvent,
    by_gpu,
    new_event,
    open_service_mark,
    recent_lines,
    summary,
)

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
GPU = "GPU-9d33a01c-353c-631c-dfd4-3f371200339d"
POLICY = EscalationPolicy()
_ids = count(1)


def ev(kind: str, ago: timedelta, **fields: Any) -> GpuEvent:
    """One stored event `ago` before NOW, ids in the order the test builds them."""
    fields.setdefault("incident_id", f"inc-{next(_ids):010d}")
    event = new_event(uuid=GPU, node="gpu-node-07", kind=kind, at=NOW - ago, **fields)
    return GpuEvent(**{**event.__dict__, "id": next(_ids)})


DAY = timedelta(days=1)


def reset_decision(history: list[GpuEvent], **kw: Any) -> tuple[str, str]:
    got = decide(history, xid=79, remedy="reset", policy=kw.pop("policy", POLICY), now=NOW, **kw)
    return got.decision, got.reason


def test_first_xid79_resets() -> None:
    """No earlier reset: the GPU is reset."""
    assert reset_decision([ev("xid", timedelta(0), xid=79)])[0] == "reset"


def test_a_reset_within_the_window_asks_for_a_reboot() -> None:
    """max_resets 1 within reset_window 7 d: a second XID 79 two days after a reset reboots,
    and the reason names the count and the last reset."""
    history = [ev("xid", 2 * DAY, xid=79), ev("reset", 2 * DAY, xid=79, result="ok")]
    decision, reason = reset_decision(history)
    assert decision == "reboot"
    assert "already reset 1 time(s) in the last 7 d" in reason
    assert "2026-11-23 12:00Z" in reason


def test_a_reset_older_than_the_window_resets_again() -> None:
    """A reset eight days ago is outside the 7-day window: reset again."""
    assert reset_decision([ev("reset", 8 * DAY, result="ok")])[0] == "reset"


def test_max_resets_is_configurable() -> None:
    """With max_resets 2, one earlier reset still resets; two reboot."""
    policy = EscalationPolicy(max_resets=2)
    one = [ev("reset", DAY, result="ok")]
    assert reset_decision(one, policy=policy)[0] == "reset"
    assert reset_decision([*one, ev("reset", DAY / 2, result="failed")], policy=policy)[0] == (
        "reboot"
    )


def test_two_reboots_for_the_same_xid_go_to_service() -> None:
    """gpud's practice: after two reboots for one XID the GPU goes to hardware service."""
    history = [ev("reboot", 5 * DAY, xid=79), ev("reboot", DAY, xid=79)]
    decision, reason = reset_decision(history)
    assert decision == "service"
    assert "rebooted 2 time(s) for XID 79" in reason


def test_reboots_for_another_xid_do_not_count() -> None:
    """Two reboots for XID 48 are another fault: an XID 79 with no reset is reset."""
    history = [ev("reboot", 5 * DAY, xid=48), ev("reboot", DAY, xid=48)]
    assert reset_decision(history)[0] == "reset"


def test_an_open_service_mark_stops_automatic_remediation() -> None:
    """A GPU marked for service and not cleared: service, for either runbook kind."""
    history = [ev("service", 3 * DAY, detail="RMA 4711")]
    decision, reason = reset_decision(history)
    assert decision == "service"
    assert "RMA 4711" in reason
    assert "clear-mark" in reason
    routed = decide(history, xid=13, remedy="route", policy=POLICY, now=NOW)
    assert routed.decision == "service"


def test_a_cleared_mark_starts_the_count_over() -> None:
    """After a person clears the mark, earlier reboots and resets no longer count."""
    history = [
        ev("reboot", 6 * DAY, xid=79),
        ev("reboot", 5 * DAY, xid=79),
        ev("reset", 5 * DAY, result="ok"),
        ev("service", 4 * DAY),
        ev("service_cleared", DAY),
    ]
    assert open_service_mark(history) is None
    assert reset_decision(history)[0] == "reset"


def test_events_of_this_incident_are_not_earlier_ones() -> None:
    """A run restarted after its own reset does not count that reset against itself."""
    history = [ev("reset", timedelta(minutes=5), result="ok", incident_id="inc-00000000aa")]
    assert reset_decision(history, incident_id="inc-00000000aa")[0] == "reset"
    assert reset_decision(history, incident_id="inc-00000000bb")[0] == "reboot"


@pytest.mark.parametrize("xid", [13, 31])
def test_first_xid13_or_31_checks_the_application(xid: int) -> None:
    """NVIDIA's catalog: a first XID 13/31 on a GPU is the application's to look at."""
    got = decide([], xid=xid, remedy="route", policy=POLICY, now=NOW)
    assert got.decision == "check_application"
    assert got.reason == f"first XID {xid} on this GPU in 7 d: check the application"


@pytest.mark.parametrize("xid", [13, 31])
def test_a_repeat_on_the_same_gpu_runs_diagnostics(xid: int) -> None:
    """The same XID on the same GPU within xid_repeat_window: run DCGM diagnostics."""
    history = [ev("xid", 3 * DAY, xid=xid, incident_id="inc-0000000abc")]
    got = decide(history, xid=xid, remedy="route", policy=POLICY, now=NOW)
    assert got.decision == "diagnostics"
    assert "inc-0000000abc" in got.reason
    assert "run DCGM diagnostics" in got.reason


def test_a_repeat_outside_the_window_or_of_another_code_is_a_first() -> None:
    """XID 13 eight days ago, or XID 31 yesterday, does not make today's XID 13 a repeat."""
    history = [ev("xid", 8 * DAY, xid=13), ev("xid", DAY, xid=31)]
    got = decide(history, xid=13, remedy="route", policy=POLICY, now=NOW)
    assert got.decision == "check_application"


def test_a_code_without_a_repeat_rule_follows_the_catalog() -> None:
    """XID 94 has no history rule: the catalog's action stands."""
    history = [ev("xid", DAY, xid=94)]
    got = decide(history, xid=94, remedy="route", policy=POLICY, now=NOW)
    assert got.decision == "check_application"
    assert "no repeat rule" in got.reason


def test_summary_lines_and_grouping() -> None:
    """Lines say when, what and which incident; a node's events group per GPU by index."""
    seen = ev("xid", 2 * DAY, xid=79)
    reset = ev("reset", DAY, xid=79, result="ok", incident_id="inc-0000000001")
    assert reset.line() == "2026-11-24 12:00Z reset ok (XID 79) [inc-0000000001]"
    history = [seen, reset]
    assert recent_lines(history, limit=1) == [reset.line()]
    assert summary(history, limit=1).startswith("last 1 of 2 events: ")
    assert summary([]) == "no earlier events recorded"
    other = new_event(uuid="GPU-1", node="gpu-node-07", kind="xid", at=NOW, gpu_index=0, xid=13)
    mine = GpuEvent(**{**reset.__dict__, "gpu_index": 3})
    assert list(by_gpu([mine, GpuEvent(**{**other.__dict__, "id": 999})])) == ["GPU-1", GPU]
