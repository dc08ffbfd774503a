"""Alertmanager → Slack root + thread → Approve click → steps run → root edited → audit."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from slack_harness import CHANNEL, FIXTURES, SlackHarness, slack_harness
from slack_standin import Posted

from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.domain.control.approvals import ApprovalStatus
from gpubot.domain.runbooks.runs import RunStatus

XID79 = (FIXTURES / "xid79_firing.json").read_bytes()
TWO_PERSON = """\
name: uncordon-two
description: Uncordon a node, with two approvers.
triggers:
  - command: uncordon-two
params:
  node: {type: node, required: true}
target: node
steps:
  - id: uncordon
    action: node.uncordon
    args: {node: "{{ params.node }}"}
    approval: two-person
    approvers: oncall
"""


@pytest.fixture(autouse=True)
def _no_env_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("GPUBOT_", "SLACK_")):
            monkeypatch.delenv(name)


@pytest.fixture
async def h(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SlackHarness]:
    rb = tmp_path / "runbooks"
    rb.mkdir()
    (rb / "uncordon-two.yaml").write_text(TWO_PERSON)
    async with slack_harness(tmp_path, monkeypatch, runbook_dirs=[rb]) as harness:
        yield harness


async def incident(h: SlackHarness) -> tuple[Posted, list[Posted], str]:
    inject_xid(h.sim, node="gpu-node-07", gpu=3)
    reply = await h.client.post(
        "/alertmanager", content=XID79, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 200
    await h.settle()
    [root] = h.standin.roots(CHANNEL)
    [approval_id] = h.approval_ids()
    return root, h.standin.thread(root.ts), approval_id


async def until_decided(h: SlackHarness, approval_id: str) -> None:
    """The click is handled after the ack; wait until its run has moved on."""
    request = await h.app.store.get_approval(approval_id)
    for _ in range(500):
        run = await h.app.store.get_run(request.run_id)
        if run.status is not RunStatus.WAITING_APPROVAL:
            break
        await asyncio.sleep(0.01)
    await h.settle()


async def ephemeral(h: SlackHarness, count: int = 1) -> list[str]:
    await h.standin.wait_for(lambda: len(h.standin.of("chat.postEphemeral")) >= count)
    return [str(c.args["text"]) for c in h.standin.of("chat.postEphemeral")]


async def test_alert_to_thread_to_approval_to_drain(h: SlackHarness) -> None:
    root, thread, approval_id = await incident(h)
    root_text = h.standin.text_of(root)
    for part in ("GPUXidError", "gpu-node-07", "critical", "*GPU*\\n3", "Alert source", "Runbook"):
        assert part in root_text
    assert "waiting for approval" in root_text  # edited in place, not re-posted
    thread_text = "\n".join(h.standin.text_of(m) for m in thread)
    assert "Plan: xid79" in thread_text
    assert "Approval needed" in thread_text
    edits_before = root.edits
    [approval_msg] = [m for m in thread if approval_id in json.dumps(m.blocks)]

    assert (await h.click(approval_id, user="U1")).status_code == 200
    await until_decided(h, approval_id)

    assert (await h.app.store.get_approval(approval_id)).status is ApprovalStatus.APPROVED
    [run] = await h.app.store.list_runs()
    steps = {s.step_id: s.status.value for s in await h.app.store.steps(run.id)}
    assert steps["drain"] == "succeeded"
    assert root.edits > edits_before  # root edited: acting
    decided = h.standin.text_of(approval_msg)
    assert "approved by <@U1> at" in decided
    assert '"type": "actions"' not in decided  # no live buttons after the decision
    votes = [e for e in await h.app.store.events() if e.kind == "approval.vote"]
    assert [(e.actor, e.result["decision"]) for e in votes] == [("U1", "approve")]
    assert h.standin.of("chat.postEphemeral") == []
    assert len(h.standin.roots(CHANNEL)) == 1

    # Approve whatever the runbook asks next, until the run ends: the audit summary closes it.
    for _ in range(10):
        pending = [
            a.id
            for a in await h.app.store.approvals_for(run.id)
            if a.status is ApprovalStatus.PENDING
        ]
        if not pending:
            break
        await h.click(pending[0], user="U2")
        await until_decided(h, pending[0])
    run = await h.app.store.get_run(run.id)
    assert run.status is not RunStatus.WAITING_APPROVAL
    assert "Audit trail" in "\n".join(m.text for m in h.standin.thread(root.ts))
    assert "resolved" not in h.standin.text_of(root)


async def test_non_approver_gets_only_an_ephemeral_message(h: SlackHarness) -> None:
    _, _, approval_id = await incident(h)
    before = [(m.ts, m.edits) for m in h.standin.messages.values()]
    await h.click(approval_id, user="U9")
    [text] = await ephemeral(h)
    assert "not in the approver group 'oncall'" in text
    await h.settle()
    assert (await h.app.store.get_approval(approval_id)).status is ApprovalStatus.PENDING
    assert [(m.ts, m.edits) for m in h.standin.messages.values()] == before


async def test_usergroup_member_may_approve(h: SlackHarness) -> None:
    h.standin.usergroups["S0ONCALL"] = ["U5"]
    _, _, approval_id = await incident(h)
    await h.click(approval_id, user="U5")
    await until_decided(h, approval_id)
    assert (await h.app.store.get_approval(approval_id)).approvers == ("U5",)
    assert len(h.standin.of("usergroups.users.list")) == 1


async def test_second_click_changes_nothing(h: SlackHarness) -> None:
    _, _, approval_id = await incident(h)
    await h.click(approval_id, user="U1")
    await until_decided(h, approval_id)
    before = [(m.ts, m.edits) for m in h.standin.messages.values()]
    await h.click(approval_id, user="U2", approve=False)
    [text] = await ephemeral(h)
    assert "already approved" in text
    await h.settle()
    assert [(m.ts, m.edits) for m in h.standin.messages.values()] == before


async def test_click_after_expiry_changes_nothing(h: SlackHarness) -> None:
    _, _, approval_id = await incident(h)
    h.clock.advance(timedelta(minutes=31))
    await h.click(approval_id, user="U1")
    [text] = await ephemeral(h)
    assert "expired" in text
    await h.settle()
    [run] = await h.app.store.list_runs()
    steps = {s.step_id: s.status.value for s in await h.app.store.steps(run.id)}
    assert steps["drain"] != "succeeded"
    assert not any(e.kind == "approval.vote" for e in await h.app.store.events())


async def test_requester_cannot_approve_own_two_person_step(h: SlackHarness) -> None:
    await h.slash("run uncordon-two node=gpu-node-02", user="U1")
    await h.standin.wait_for(lambda: bool(h.standin.of("response_url")))  # handled after ack
    await h.settle()
    [approval_id] = h.approval_ids()
    await h.click(approval_id, user="U1")
    [text] = await ephemeral(h)
    assert "requester of a run cannot approve" in text
    await h.settle()
    request = await h.app.store.get_approval(approval_id)
    assert request.status is ApprovalStatus.PENDING
    assert request.votes == ()


async def test_restart_keeps_posting_in_the_same_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, h: SlackHarness
) -> None:
    root, _, _ = await incident(h)
    [inc] = await h.app.store.list_incidents()
    assert await h.app.store.get_chat_ref(f"thread:{inc.id}") == (CHANNEL, root.ts)
    # A fresh notifier (a restart) finds the thread in the store, not in memory.
    from gpubot.domain.results import Message
    from gpubot.slack.app import make_notifier, web_client

    fresh = make_notifier(h.app.settings, web_client(h.app.settings), h.app.store)  # type: ignore[arg-type]
    await fresh.post(incident_id=inc.id, message=Message("after restart"))
    await fresh.outbox.flush()
    await fresh.outbox.aclose()
    assert any(m.text == "after restart" for m in h.standin.thread(root.ts))
    assert len(h.standin.roots(CHANNEL)) == 1
    assert json.dumps([m.blocks for m in h.standin.thread(root.ts)])
