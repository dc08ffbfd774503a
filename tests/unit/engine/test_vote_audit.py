"""Every approval click is in the audit trail, the refused ones too, with who and why; and
a run's end puts the chain head in the thread and the log (anchors outside the database)."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Any

import pytest

from gpubot.domain.control.audit import AuditEvent
from gpubot.errors import ApprovalError

MakeHarness = Any  # the `harness` fixture in conftest.py

GATED = """
name: gated
triggers: [{command: gated}]
params:
  node: {type: node, default: gpu-node-03}
target: node
steps:
  - {id: first, action: test.probe, args: {key: first}, approval: auto}
  - {id: second, action: test.probe, args: {key: second}, approval: %s, approvers: oncall}
"""


async def _waiting(h: Any, requested_by: str = "U9") -> tuple[str, str]:
    """A run of `gated` waiting at `second`: (run id, approval id)."""
    _plan, run = await h.service.start_command_run(
        runbook="gated", args={}, requested_by=requested_by, cluster="sim"
    )
    assert run is not None
    await h.service.wait_idle()
    [ask] = h.notifier.of("ask_approval")
    return run.id, ask.approval_id


async def _clicks(h: Any) -> list[AuditEvent]:
    await h.service.wait_idle()
    return [e for e in await h.store.events() if e.kind in ("approval.vote", "approval.refused")]


async def _refused(h: Any, match: str, **vote: Any) -> AuditEvent:
    """Click, expect the refusal, and return the event it left (the newest click)."""
    before = len(await _clicks(h))
    with pytest.raises(ApprovalError, match=match):
        await h.service.vote(**vote)
    clicks = await _clicks(h)
    assert len(clicks) == before + 1, "a refused click must leave exactly one event"
    event = clicks[-1]
    assert event.kind == "approval.refused"
    assert event.actor == vote["user"]
    assert event.result["accepted"] is False
    assert match.split(".")[0] in event.result["message"]
    assert event.reason == f"approval {vote['approval_id']}"
    return event


async def test_non_approver_click_is_audited(harness: MakeHarness) -> None:
    h = harness(GATED % "required")
    run_id, approval = await _waiting(h)
    event = await _refused(
        h, "not in the approver group", approval_id=approval, user="U666", decision="approve"
    )
    assert (event.run_id, event.step, event.result["status"]) == (run_id, "second", "pending")


async def test_self_approval_and_second_vote_are_audited(harness: MakeHarness) -> None:
    h = harness(GATED % "two-person")
    _run, approval = await _waiting(h, requested_by="U1")
    await _refused(
        h, "requester of a run cannot", approval_id=approval, user="U1", decision="approve"
    )
    await h.service.vote(approval_id=approval, user="U2", decision="approve")
    await _refused(h, "already voted", approval_id=approval, user="U2", decision="approve")


async def test_expired_click_is_audited_and_expires_the_request(harness: MakeHarness) -> None:
    h = harness(GATED % "required")
    run_id, approval = await _waiting(h)
    h.clock.advance(timedelta(hours=2))
    event = await _refused(h, "expired", approval_id=approval, user="U1", decision="approve")
    assert event.result["status"] == "expired"
    assert (await h.run_of(run_id)).status.value == "cancelled"


async def test_click_on_a_decided_request_is_audited(harness: MakeHarness) -> None:
    h = harness(GATED % "required")
    _run, approval = await _waiting(h)
    await h.service.vote(approval_id=approval, user="U1", decision="approve")
    event = await _refused(h, "already approved", approval_id=approval, user="U2", decision="deny")
    assert event.result["decision"] == "deny"


async def test_click_on_an_unknown_request_is_audited(harness: MakeHarness) -> None:
    """A button whose approval does not exist (an old message, a forged value)."""
    h = harness(GATED % "required")
    event = await _refused(
        h, "does not exist", approval_id="apr-nope", user="U1", decision="approve"
    )
    assert (event.run_id, event.incident_id) == (None, None)


async def test_double_click_leaves_two_events_one_vote(harness: MakeHarness) -> None:
    """Two clicks at once on one replica: one vote counts; the other is refused (already
    decided, or lost the compare-and-set), and both are in the trail."""
    h = harness(GATED % "required")
    _run, approval = await _waiting(h)
    outcomes = await asyncio.gather(
        h.service.vote(approval_id=approval, user="U1", decision="approve"),
        h.service.vote(approval_id=approval, user="U2", decision="approve"),
        return_exceptions=True,
    )
    assert sum(isinstance(o, ApprovalError) for o in outcomes) == 1
    clicks = await _clicks(h)
    assert sorted(e.kind for e in clicks) == ["approval.refused", "approval.vote"]
    assert {e.actor for e in clicks} == {"U1", "U2"}
    assert h.probe.calls["second"] == 1
    assert await h.store.verify() == []


async def test_run_end_puts_the_chain_head_in_the_thread_and_the_log(
    harness: MakeHarness, caplog: pytest.LogCaptureFixture
) -> None:
    """The audit summary and one log line carry the whole chain's head (seq and hash), an
    anchor that `gpubot audit verify --min-seq --expect-head` can be held to later."""
    from gpubot.domain.incidents.correlation import observations

    h = harness(
        GATED.replace("triggers: [{command: gated}]", "triggers: [{alertname: X}]") % "auto"
    )
    payload = _payload()
    caplog.set_level(logging.INFO, logger="gpubot.audit")
    outcomes = await h.store.ingest(observations(payload, default_cluster="sim"), now=h.clock.now())
    incident = await h.store.get_incident(outcomes[0].incident_id)
    await h.service.start_incident_runs(incident)
    await h.service.wait_idle()

    head = await h.store.head()
    assert head is not None
    [run] = await h.store.list_runs()
    summary = [c.text for c in h.notifier.of("post") if c.text.startswith("Audit trail")]
    assert len(summary) == 1
    assert f"chain head seq {head.seq} / {head.hash[:12]}" in summary[0]
    assert f"--min-seq {head.seq} --expect-head {head.hash[:12]}" in summary[0]
    anchors = [r.getMessage() for r in caplog.records if r.name == "gpubot.audit"]
    assert anchors == [f"audit chain head seq {head.seq} hash {head.hash} (run {run.id} succeeded)"]


def _payload() -> Any:
    from gpubot.domain.incidents.alerts import AlertmanagerPayload

    return AlertmanagerPayload.model_validate(
        {
            "version": "4",
            "groupKey": '{}:{alertname="X"}',
            "status": "firing",
            "receiver": "gpubot",
            "groupLabels": {},
            "commonLabels": {},
            "commonAnnotations": {},
            "externalURL": "http://am",
            "alerts": [
                {
                    "status": "firing",
                    "labels": {"alertname": "X", "cluster": "sim", "Hostname": "gpu-node-03"},
                    "annotations": {"summary": "x"},
                    "startsAt": "2026-11-22T01:00:00Z",
                    "endsAt": "0001-01-01T00:00:00Z",
                    "generatorURL": "http://prom",
                    "fingerprint": "f00d",
                }
            ],
        }
    )
