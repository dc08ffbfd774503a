"""Executor rules: approval gates, conditions, retries, timeouts, failure routing, dry-run."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from gpubot.backends.store.tables import approvals
from gpubot.errors import ApprovalError, InputError

MakeHarness = Any  # the `harness` fixture in conftest.py

PROBES = """
name: probes
triggers: [{command: probes}]
params:
  node: {type: node, default: gpu-node-03}
target: node
steps:
  - {id: first, action: test.probe, args: {key: first}, approval: auto}
  - {id: second, action: test.probe, args: {key: second}, approval: %s, approvers: oncall}
  - {id: third, action: test.probe, args: {key: third}, approval: auto}
"""


async def _start(h, runbook="probes", requested_by="U9", **args):  # type: ignore[no-untyped-def]
    _plan, run = await h.service.start_command_run(
        runbook=runbook, args=args, requested_by=requested_by, cluster="sim"
    )
    assert run is not None
    await h.service.wait_idle()
    return run


async def test_required_step_waits_for_one_approver_then_runs(harness: MakeHarness) -> None:
    """Auto steps run at once; a `required` step waits; one group member's approval runs it."""
    h = harness(PROBES % "required")
    run = await _start(h)
    assert await h.step_status(run.id) == {
        "first": "succeeded",
        "second": "waiting_approval",
        "third": "pending",
    }
    assert h.probe.calls == {"first": 1}
    [ask] = h.notifier.of("ask_approval")
    await h.service.vote(approval_id=ask.approval_id, user="U1", decision="approve")
    assert (await h.run_of(run.id)).status.value == "succeeded"
    assert h.probe.calls == {"first": 1, "second": 1, "third": 1}
    started = [e for e in await h.store.events() if e.kind == "step.started" and e.step == "second"]
    assert [e.actor for e in started] == ["U1"]  # the approver is recorded as who acted


async def test_a_waiting_step_whose_request_is_gone_is_asked_again_not_run(
    harness: MakeHarness,
) -> None:
    """A step recorded as waiting for approval, with no approval request in the store (lost
    to a crash, or removed by hand), is asked for again; it never runs unapproved."""
    h = harness(PROBES % "required")
    run = await _start(h)
    assert await h.step_status(run.id) == {
        "first": "succeeded",
        "second": "waiting_approval",
        "third": "pending",
    }
    with h.store._engine.begin() as conn:
        conn.execute(approvals.delete())
    await h.service.executor.advance(run.id)
    await h.service.wait_idle()
    assert h.probe.calls == {"first": 1}  # the gated step did not run
    assert (await h.step_status(run.id))["second"] == "waiting_approval"
    assert len(h.notifier.of("ask_approval")) == 2  # a new request in the thread
    [request] = await h.store.approvals_for(run.id)
    assert request.status.value == "pending"


async def test_two_person_needs_two_distinct_approvers(
    harness: MakeHarness,
) -> None:
    """Two-person rule: the requester never counts, the same person twice never counts."""
    h = harness(PROBES % "two-person")
    run = await _start(h, requested_by="U1")
    [ask] = h.notifier.of("ask_approval")
    with pytest.raises(ApprovalError, match="requester"):
        await h.service.vote(approval_id=ask.approval_id, user="U1", decision="approve")
    await h.service.vote(approval_id=ask.approval_id, user="U2", decision="approve")
    with pytest.raises(ApprovalError, match="already voted"):
        await h.service.vote(approval_id=ask.approval_id, user="U2", decision="approve")
    assert await h.step_status(run.id) == {
        "first": "succeeded",
        "second": "waiting_approval",
        "third": "pending",
    }
    await h.service.vote(
        approval_id=ask.approval_id, user="U3", decision="approve", user_groups=["S9"]
    )
    assert (await h.run_of(run.id)).status.value == "succeeded"
    assert h.probe.calls["second"] == 1


async def test_outsider_click_changes_nothing(harness: MakeHarness) -> None:
    """A click from outside the approver group is refused with a reason and changes nothing."""
    h = harness(PROBES % "required")
    run = await _start(h)
    [ask] = h.notifier.of("ask_approval")
    with pytest.raises(ApprovalError, match="not in the approver group 'oncall'"):
        await h.service.vote(approval_id=ask.approval_id, user="U666", decision="approve")
    assert (await h.run_of(run.id)).status.value == "waiting_approval"
    assert "second" not in h.probe.calls
    assert any(e.kind == "approval.refused" and e.actor == "U666" for e in await h.store.events())


async def test_deny_cancels_the_run_and_never_runs_the_step(harness: MakeHarness) -> None:
    h = harness(PROBES % "required")
    run = await _start(h)
    [ask] = h.notifier.of("ask_approval")
    await h.service.vote(approval_id=ask.approval_id, user="U2", decision="deny")
    done = await h.run_of(run.id)
    assert done.status.value == "cancelled"
    assert "denied by U2" in done.note
    assert await h.step_status(run.id) == {
        "first": "succeeded",
        "second": "denied",
        "third": "cancelled",
    }
    assert "second" not in h.probe.calls
    with pytest.raises(ApprovalError, match="already denied"):
        await h.service.vote(approval_id=ask.approval_id, user="U1", decision="approve")


async def test_approval_expires_after_30_minutes(harness: MakeHarness) -> None:
    """Expiry uses the clock: after 30 min the tick cancels the run; a late click is refused."""
    h = harness(PROBES % "required")
    run = await _start(h)
    [ask] = h.notifier.of("ask_approval")
    h.clock.advance(timedelta(minutes=29))
    await h.service.background.tick()
    assert (await h.run_of(run.id)).status.value == "waiting_approval"
    h.clock.advance(timedelta(minutes=2))
    await h.service.background.tick()
    done = await h.run_of(run.id)
    assert done.status.value == "cancelled"
    assert "expired" in done.note
    with pytest.raises(ApprovalError, match="expired"):
        await h.service.vote(approval_id=ask.approval_id, user="U1", decision="approve")
    assert "second" not in h.probe.calls


async def test_unknown_approval_id_is_refused(harness: MakeHarness) -> None:
    h = harness(PROBES % "required")
    with pytest.raises(ApprovalError, match="does not exist"):
        await h.service.vote(approval_id="apr-forged", user="U1", decision="approve")


WHEN = """
name: when
triggers: [{command: when}]
steps:
  - {id: look, action: node.gpu_health, args: {node: gpu-node-02}, approval: auto}
  - id: act
    action: test.probe
    args: {key: act}
    approval: auto
    when: "not steps.look.output.healthy"
  - id: always
    action: test.probe
    args: {key: "after-{{ steps.look.output.gpus }}"}
    approval: auto
"""


async def test_when_skips_on_earlier_output_and_args_see_outputs(harness: MakeHarness) -> None:
    """`when` reads earlier steps' outputs; a false condition skips; args render from outputs."""
    h = harness(WHEN)
    run = await _start(h, runbook="when")
    assert await h.step_status(run.id) == {
        "look": "succeeded",
        "act": "skipped",
        "always": "succeeded",
    }
    assert h.probe.calls == {"after-8": 1}


RETRY = """
name: retry
triggers: [{command: retry}]
steps:
  - id: flaky
    action: test.probe
    args: {key: flaky, fail_times: %d, permanent: %s}
    approval: auto
    retries: 2
    retry_delay: 5s
  - {id: after, action: test.probe, args: {key: after}, approval: auto}
"""


async def test_temporary_errors_are_retried_up_to_the_limit(harness: MakeHarness) -> None:
    h = harness(RETRY % (2, "false"))
    run = await _start(h, runbook="retry")
    assert (await h.run_of(run.id)).status.value == "succeeded"
    assert h.probe.calls["flaky"] == 3
    assert h.clock.slept == [1.0, 1.0]  # the error's own delay wins over retry_delay
    [flaky] = [s for s in await h.store.steps(run.id) if s.step_id == "flaky"]
    assert flaky.attempts == 3


async def test_retries_exhausted_fails_and_stops(harness: MakeHarness) -> None:
    h = harness(RETRY % (5, "false"))
    run = await _start(h, runbook="retry")
    done = await h.run_of(run.id)
    assert done.status.value == "failed"
    assert "flaky" in done.note
    assert h.probe.calls == {"flaky": 3}
    assert await h.step_status(run.id) == {"flaky": "failed", "after": "cancelled"}


async def test_permanent_errors_are_not_retried(harness: MakeHarness) -> None:
    h = harness(RETRY % (1, "true"))
    run = await _start(h, runbook="retry")
    assert (await h.run_of(run.id)).status.value == "failed"
    assert h.probe.calls == {"flaky": 1}


ROUTING = """
name: routing
triggers: [{command: routing}]
steps:
  - id: a
    action: test.probe
    args: {key: a, fail_times: 1, permanent: true}
    approval: auto
    on_failure: %s
  - {id: b, action: test.probe, args: {key: b}, approval: auto}
  - {id: c, action: test.probe, args: {key: c}, approval: auto}
"""


@pytest.mark.parametrize(
    ("rule", "expected", "run_status"),
    [
        ("stop", {"a": "failed", "b": "cancelled", "c": "cancelled"}, "failed"),
        ("continue", {"a": "failed", "b": "succeeded", "c": "succeeded"}, "failed"),
        ("goto:c", {"a": "failed", "b": "skipped", "c": "succeeded"}, "failed"),
    ],
)
async def test_on_failure_routes(
    harness: MakeHarness, rule: str, expected: dict[str, str], run_status: str
) -> None:
    """stop ends the run, continue goes on, goto jumps forward skipping what lies between."""
    h = harness(ROUTING % rule)
    run = await _start(h, runbook="routing")
    assert await h.step_status(run.id) == expected
    assert (await h.run_of(run.id)).status.value == run_status


TIMEOUT = """
name: slow
triggers: [{command: slow}]
steps:
  - {id: slow, action: test.probe, args: {key: slow, sleep: 5}, approval: auto, timeout: 0.05}
"""


async def test_step_timeout_fails_the_step(harness: MakeHarness) -> None:
    h = harness(TIMEOUT)
    run = await _start(h, runbook="slow")
    [slow] = await h.store.steps((await h.run_of(run.id)).id)
    assert slow.status.value == "failed"
    assert "timed out after 0.05s" in slow.error


async def test_dry_run_plans_every_step_and_changes_nothing(harness: MakeHarness) -> None:
    """A dry-run run records what each step would do, needs no approval, and mutates nothing."""
    h = harness(PROBES % "two-person")
    _plan, run = await h.service.start_command_run(
        runbook="probes", args={}, requested_by="U1", cluster="sim", dry_run=True
    )
    assert run is not None
    assert (await h.run_of(run.id)).status.value == "succeeded"
    assert h.probe.calls == {}
    events = [e for e in await h.store.events() if e.kind == "step.dry_run"]
    assert len(events) == 3
    assert all(e.dry_run for e in events)


async def test_bad_command_input_is_refused_with_one_line(harness: MakeHarness) -> None:
    h = harness(PROBES % "required")
    with pytest.raises(InputError, match="unknown runbook 'nope'"):
        await _start(h, runbook="nope")
    with pytest.raises(InputError, match="not a valid Kubernetes node name"):
        await _start(h, node="Bad_Node;rm -rf")
    with pytest.raises(InputError, match="no parameter 'colour'"):
        await _start(h, colour="red")
    with pytest.raises(InputError, match="unknown cluster 'prod'"):
        await h.service.start_command_run(
            runbook="probes", args={}, requested_by="U1", cluster="prod"
        )
