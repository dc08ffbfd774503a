"""Slack abuse through the real /slack/events endpoint: forged, unsigned and replayed requests,
and clicks that the approval policy refuses. None of them changes the cluster or runs a step."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

import pytest
from slack_harness import CHANNEL, FIXTURES, SlackHarness, sign, slack_harness
from waiting import eventually

from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.domain.control.approvals import ApprovalStatus

XID79 = (FIXTURES / "xid79_firing.json").read_bytes()
TWO_PERSON = """\
name: drain-two
description: Cordon a node, then drain it with two approvers.
triggers: [{command: drain-two}]
params: {node: {type: node, required: true}}
target: node
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
  - {id: drain, action: node.drain, args: {node: "{{ params.node }}"},
     approval: two-person, approvers: oncall}
"""


@pytest.fixture
async def h(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SlackHarness]:
    (tmp_path / "runbooks").mkdir()
    (tmp_path / "runbooks" / "drain-two.yaml").write_text(TWO_PERSON)
    async with slack_harness(tmp_path, monkeypatch, runbook_dirs=[tmp_path / "runbooks"]) as s:
        yield s


@dataclass
class World:
    """Everything a request could change: the cluster, the audit trail, Slack."""

    cluster: dict[str, Any]
    audit: list[tuple[str, str, str | None]]
    slack_calls: int
    approvals: dict[str, str]


async def world(h: SlackHarness) -> World:
    await h.settle()
    approvals = {}
    for run in await h.app.store.list_runs():
        for a in await h.app.store.approvals_for(run.id):
            approvals[a.id] = a.status.value
    return World(
        cluster=h.sim.snapshot().to_dict(),
        audit=[(e.kind, e.actor, e.step) for e in await h.app.store.events()],
        slack_calls=len(h.standin.calls),
        approvals=approvals,
    )


async def xid_incident(h: SlackHarness) -> str:
    """XID 79 on gpu-node-07: quarantined automatically, the drain waits for approval."""
    inject_xid(h.sim, node="gpu-node-07", gpu=3)
    reply = await h.client.post(
        "/alertmanager", content=XID79, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 200
    await h.settle()
    [approval_id] = h.approval_ids()
    return approval_id


async def refused(h: SlackHarness, before: int) -> str:
    """The one ephemeral answer a refused click gets."""
    await h.standin.wait_for(lambda: len(h.standin.of("chat.postEphemeral")) > before)
    await h.settle()
    [answer] = h.standin.of("chat.postEphemeral")[before:]
    return str(answer.args["text"])


def drain_started(w: World) -> int:
    return sum(1 for kind, _, step in w.audit if kind == "step.started" and step == "drain")


def _stale(body: bytes) -> dict[str, str]:
    return sign(body, ts=int(time.time()) - 301)


def _future(body: bytes) -> dict[str, str]:
    # Real time moves toward a future stamp while the test runs: a minute of margin keeps it
    # outside the window however slowly the first request is handled.
    return sign(body, ts=int(time.time()) + 360)


def _forged(body: bytes) -> dict[str, str]:
    return sign(body, secret="not-the-signing-secret")


def _other_body(body: bytes) -> dict[str, str]:
    return sign(body + b"&user_name=someone-else")  # the signature of a different body


def _garbled(body: bytes) -> dict[str, str]:
    return {**sign(body), "X-Slack-Signature": "v0=zz"}


def _unsigned(body: bytes) -> dict[str, str]:
    return {}


@pytest.mark.parametrize(
    "headers",
    [_unsigned, _forged, _other_body, _garbled, _stale, _future],
    ids=["unsigned", "forged", "tampered", "garbled", "replay-301s-old", "360s-ahead"],
)
async def test_bad_signature_or_stale_request_is_401_and_changes_nothing(
    h: SlackHarness, headers: Any
) -> None:
    """An approver's Approve click and a `/gpu run` sent without a valid signature, or with
    one older (or newer) than 5 minutes, get 401 with a one-line reason; the approval stays
    pending, no run starts, the cluster and the audit trail are unchanged, Slack hears nothing."""
    approval_id = await xid_incident(h)
    before = await world(h)
    click = h.click_body(approval_id, user="U1")
    command = h.slash_body("run xid79 node=gpu-node-02", user="U1")
    for body in (click, command):
        reply = await h.events(body, headers(body))
        assert reply.status_code == 401
        error = reply.json()["error"]
        assert error.startswith("invalid request: ")
        assert "\n" not in error
    after = await world(h)
    assert after == before
    assert after.approvals[approval_id] == "pending"
    assert len(await h.app.store.list_runs()) == 1


async def test_non_approver_click_is_refused_and_only_recorded(h: SlackHarness) -> None:
    """A user outside the approver group clicks Approve: an ephemeral reason, the drain never
    starts, the cluster is unchanged, and the audit trail gains exactly the refused click."""
    approval_id = await xid_incident(h)
    before = await world(h)
    assert (await h.click(approval_id, user="U9")).status_code == 200
    assert "not in the approver group 'oncall'" in await refused(h, 0)
    after = await world(h)
    assert after.cluster == before.cluster
    assert after.approvals == before.approvals
    assert after.audit == [*before.audit, ("approval.refused", "U9", "drain")]


async def test_self_approval_under_two_person_is_refused(h: SlackHarness) -> None:
    """The requester of a two-person run cannot approve it, and one approver is not two:
    nothing is drained until a second, distinct approver agrees; then exactly once."""
    h.standin.usergroups["S0ONCALL"] = ["U5"]  # oncall: U1, U2 and the user group's U5
    assert (await h.slash("run drain-two node=gpu-node-07", user="U1")).status_code == 200
    await h.standin.wait_for(lambda: bool(h.standin.of("response_url")))
    await h.settle()
    [approval_id] = h.approval_ids()
    before = await world(h)

    await h.click(approval_id, user="U1")  # the requester
    assert "requester of a run cannot approve" in await refused(h, 0)
    await h.click(approval_id, user="U2")  # first approver
    await h.settle()
    await h.click(approval_id, user="U2")  # the same approver again
    assert "already voted" in await refused(h, 1)
    mid = await world(h)
    assert mid.cluster == before.cluster
    assert mid.approvals[approval_id] == "pending"
    assert drain_started(mid) == 0

    await h.click(approval_id, user="U5")  # a distinct second approver

    async def decided() -> bool:
        done = await world(h)
        return done.approvals[approval_id] != "pending" and bool(drain_started(done))

    await eventually(decided, "the approval decided and the drain started")
    done = await world(h)
    assert done.approvals[approval_id] == "approved"
    assert drain_started(done) == 1
    pods = [(p["node"], p["owner_kind"]) for p in done.cluster["pods"]]
    assert ("gpu-node-07", "ReplicaSet") in [
        (p["node"], p["owner_kind"]) for p in before.cluster["pods"]
    ]
    assert ("gpu-node-07", "ReplicaSet") not in pods  # drained: only DaemonSet pods stay


async def test_double_click_runs_the_step_once(h: SlackHarness) -> None:
    """Two Approve clicks arrive at the same moment (a double click: two requests, each
    signed): one is accepted, the other refused, the drain runs once. (A replay of one
    signed request never reaches the listener: test_rel_slack_edge.py.)"""
    approval_id = await xid_incident(h)
    bodies = [h.click_body(approval_id, user="U1") for _ in range(2)]
    replies = await asyncio.gather(*(h.events(b, sign(b)) for b in bodies))
    assert [r.status_code for r in replies] == [200, 200]
    # Whichever loses: refused as already decided, or as losing the compare-and-set.
    answer = await refused(h, 0)
    assert "already" in answer or "at the same moment" in answer

    async def approved() -> bool:
        return (await h.app.store.get_approval(approval_id)).status is ApprovalStatus.APPROVED

    await eventually(approved, "the approval to be approved")
    after = await world(h)
    votes = [a for k, a, s in after.audit if k == "approval.vote" and s == "drain"]
    assert votes == ["U1"]
    assert drain_started(after) == 1


async def test_late_click_after_expiry_runs_nothing(h: SlackHarness) -> None:
    """A click 31 minutes after the request (expiry 30) is refused as expired; the run is
    cancelled instead of draining, and the cluster keeps only the automatic quarantine."""
    approval_id = await xid_incident(h)
    before = await world(h)
    h.clock.advance(timedelta(minutes=31))
    await h.click(approval_id, user="U1")
    assert "expired" in await refused(h, 0)
    after = await world(h)
    assert after.cluster == before.cluster
    assert after.approvals[approval_id] == "expired"
    assert drain_started(after) == 0
    assert not any(kind == "approval.vote" for kind, _, _ in after.audit)
    [run] = await h.app.store.list_runs()
    assert run.status.value == "cancelled"
    root = h.standin.roots(CHANNEL)[0]
    assert "expired" in json.dumps([m.blocks for m in h.standin.thread(root.ts)]) + "".join(
        m.text for m in h.standin.thread(root.ts)
    )


@pytest.mark.parametrize(
    "change",
    [
        {"team": {"id": "T0OTHER", "domain": "other"}},
        {"user": {"id": "U1", "username": "u1", "team_id": "T0OTHER"}},
        {"api_app_id": "A0OTHER"},
        {"enterprise": {"id": "E0OTHER"}},
    ],
    ids=["other-team", "approver-from-another-team", "other-app", "an-org"],
)
async def test_an_approvers_click_from_another_workspace_changes_nothing(
    h: SlackHarness, change: dict[str, Any]
) -> None:
    """U1 is an approver; the same click, correctly signed with the app's secret but naming
    another team, org or app: 403 with one line, the approval stays pending, the drain never
    starts, the audit trail and the cluster are unchanged, and Slack hears nothing."""
    approval_id = await xid_incident(h)
    before = await world(h)
    form = parse_qs(h.click_body(approval_id, user="U1").decode())
    payload = {**json.loads(form["payload"][0]), **change}
    body = urlencode({"payload": json.dumps(payload)}).encode()

    reply = await h.events(body, sign(body))

    assert reply.status_code == 403
    assert reply.json()["error"].startswith("not this workspace: ")
    after = await world(h)
    assert after == before
    assert after.approvals[approval_id] == "pending"
    assert drain_started(after) == 0
