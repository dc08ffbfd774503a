"""Idle-GPU reclamation end to end through Slack: a GPUIdleAllocated webhook → the owner's
notice with a mention and an Object button → the grace period (fake clock) → an approval
request → an approver's click → the Deployment at zero or the bare pod deleted → the audit
entry. Also: the owner objects and keeps it; opted-out and system pods are left alone."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from slack_harness import CHANNEL, SlackHarness, sign, slack_harness, trigger_id
from slack_standin import Posted
from waiting import LIMIT_S

from gpubot.backends.simulated import SimPod
from gpubot.backends.simulated.scenarios import idle_alert
from gpubot.domain.runbooks.runs import Run, RunStatus
from gpubot.engine.clock import FakeClock

OWNER = "U7OWNER"
SANDBOX = "vllm-sandbox"  # research: a Deployment, 1 replica of 4 idle GPUs on gpu-node-12


class HeldClock(FakeClock):
    """sleep() returns once the test moves time past its end, so the grace period can be
    watched from outside (FakeClock's sleep would let four hours pass at once)."""

    def __init__(self) -> None:
        super().__init__()
        self._waiting: list[tuple[datetime, asyncio.Future[None]]] = []
        self._released = False

    def release(self) -> None:
        """From now on sleep() passes at once, as FakeClock's does (for the teardown)."""
        self._released = True
        self.advance(timedelta(days=2))

    @property
    def sleepers(self) -> int:
        return sum(1 for _, f in self._waiting if not f.done())

    def advance(self, delta: timedelta) -> None:
        super().advance(delta)
        for due, waiter in list(self._waiting):
            if due <= self.now():
                self._waiting.remove((due, waiter))
                if not waiter.done():
                    waiter.set_result(None)

    async def sleep(self, seconds: float) -> None:
        if self._released:
            await FakeClock.sleep(self, seconds)
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append((self.now() + timedelta(seconds=seconds), waiter))
        await waiter


@pytest.fixture(autouse=True)
def _no_env_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("GPUBOT_", "SLACK_")):
            monkeypatch.delenv(name)


@pytest.fixture
async def h(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SlackHarness]:
    clock = HeldClock()
    reclaim = {"owners": {"research": f"<@{OWNER}>"}}
    async with slack_harness(tmp_path, monkeypatch, clock=clock, reclaim=reclaim) as harness:
        try:
            yield harness
        finally:
            clock.release()  # no grace period outlives the test


async def until(predicate: Callable[[], Any], *, within: float = LIMIT_S) -> None:
    deadline = time.monotonic() + within
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        if time.monotonic() > deadline:
            raise AssertionError("never got there")
        await asyncio.sleep(0.01)


def _clock(h: SlackHarness) -> HeldClock:
    assert isinstance(h.clock, HeldClock)
    return h.clock


async def _alert(h: SlackHarness, namespace: str, pod: str) -> Run:
    known = {r.id for r in await h.app.store.list_runs()}
    body = json.dumps(idle_alert(h.sim, namespace=namespace, pod=pod)).encode()
    reply = await h.client.post(
        "/alertmanager", content=body, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 200, reply.text
    await until(lambda: _new_run(h, known))
    [run] = [r for r in await h.app.store.list_runs() if r.id not in known]
    return run


async def _new_run(h: SlackHarness, known: set[str]) -> bool:
    return any(r.id not in known for r in await h.app.store.list_runs())


async def _step(h: SlackHarness, run_id: str, step: str) -> str:
    return next(s.status.value for s in await h.app.store.steps(run_id) if s.step_id == step)


async def _in_grace(h: SlackHarness, run_id: str) -> Posted:
    """Wait for the grace period to be under way; return the owner's notice in the thread."""

    async def waiting() -> bool:
        return await _step(h, run_id, "grace") == "running" and _clock(h).sleepers > 0

    await until(waiting)
    await h.slack.notifier.outbox.flush()
    [notice] = [m for m in h.standin.messages.values() if _object_button(m) is not None]
    return notice


async def _settled(h: SlackHarness, run_id: str) -> Run:
    async def still() -> bool:
        run = await h.app.store.get_run(run_id)
        return run.status.finished or run.status is RunStatus.WAITING_APPROVAL

    await until(still)
    await h.app.service.wait_idle()
    await h.slack.notifier.outbox.flush()
    return await h.app.store.get_run(run_id)


def _object_button(message: Posted) -> dict[str, Any] | None:
    for block in message.blocks:
        if block.get("block_id") == "gpubot_object":
            [button] = block["elements"]
            return dict(button)
    return None


async def _object(h: SlackHarness, notice: Posted, *, user: str) -> None:
    """Press "Object — keep it" on the notice, as Slack sends the click."""
    button = _object_button(notice) or {"action_id": "gpubot_object", "value": ""}
    payload = {
        "type": "block_actions",
        "team": {"id": "T0001", "domain": "test"},
        "user": {"id": user, "username": user.lower(), "team_id": "T0001"},
        "api_app_id": "A0001",
        "token": "legacy-unused",
        "container": {"type": "message", "message_ts": notice.ts, "channel_id": notice.channel},
        "trigger_id": trigger_id(),
        "channel": {"id": notice.channel, "name": "gpu-incidents"},
        "message": {"ts": notice.ts, "text": notice.text, "blocks": notice.blocks},
        "response_url": h.standin.response_url("object"),
        "actions": [{**button, "block_id": "gpubot_object", "type": "button", "action_ts": "1.3"}],
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    reply = await h.events(body, sign(body))
    assert reply.status_code == 200


async def _ephemeral(h: SlackHarness, count: int) -> str:
    await h.standin.wait_for(lambda: len(h.standin.of("chat.postEphemeral")) >= count)
    return str(h.standin.of("chat.postEphemeral")[count - 1].args["text"])


def _approval_id(h: SlackHarness) -> str:
    return next(
        b["elements"][0]["value"]
        for m in h.standin.messages.values()
        for b in m.blocks
        if b.get("block_id") == "gpubot_approval"
    )


async def test_idle_deployment_is_reclaimed_after_the_grace_period_with_approval(
    h: SlackHarness,
) -> None:
    pod = next(p.name for p in h.sim.snapshot().pods if p.name.startswith(SANDBOX))
    run = await _alert(h, "research", pod)
    notice = await _in_grace(h, run.id)
    [root] = h.standin.roots(CHANNEL)
    assert root.text.startswith("[INFO] GPUIdleAllocated: GPU ")
    assert notice.thread_ts == root.ts
    notice_text = h.standin.text_of(notice)
    assert f"<@{OWNER}>: Deployment/vllm-sandbox in research holds 4 x NVIDIA H100" in notice_text
    assert "Grace period ends" in notice_text
    assert _object_button(notice) == {
        "type": "button",
        "action_id": "gpubot_object",
        "text": {"type": "plain_text", "text": "Object — keep it"},
        "style": "primary",
        "value": run.id,
    }
    assert not [m for m in h.standin.messages.values() if "Approval needed" in m.text]

    _clock(h).advance(timedelta(hours=4))  # nobody objected
    assert (await _settled(h, run.id)).status is RunStatus.WAITING_APPROVAL
    approval = _approval_id(h)
    await h.click(approval, user="U1")
    await until(lambda: _is(h, run.id, RunStatus.SUCCEEDED))
    await h.app.service.wait_idle()
    await h.slack.notifier.outbox.flush()

    deployment = await h.sim.kube.workloads.get_workload(
        namespace="research", kind="Deployment", name=SANDBOX
    )
    assert (deployment.replicas, deployment.pods) == (0, 0)
    assert deployment.annotations["gpubot.io/reclaimed-from-replicas"] == "1"
    thread = " ".join(h.standin.text_of(m) for m in h.standin.thread(root.ts))
    assert "kubectl -n research scale deployment/vllm-sandbox --replicas=1" in thread
    assert "freeing 4 GPU-hours for every hour it stays down" in thread
    [entry] = [
        e
        for e in await h.app.store.events(run_id=run.id)
        if e.kind == "step.finished" and e.action == "workload.reclaim"
    ]
    assert (entry.actor, entry.result["gpus_released"], entry.result["workload"]) == (
        "U1",
        4,
        "Deployment/vllm-sandbox",
    )
    assert await h.app.store.verify() == []

    # The next report sums what the reclamation saved, and the sandbox is no longer idle.
    _clock(h).advance(timedelta(hours=10))
    assert h.app.reports is not None
    report = (await h.app.reports.build(cluster="sim")).report
    assert [(r.workload, r.gpus, r.saved_gpu_hours) for r in report.reclaimed] == [
        ("Deployment/vllm-sandbox", 4, 40.0)
    ]
    assert not [a for a in report.idle if a.owner == "Deployment/vllm-sandbox"]

    # A click on the old notice now: refused as too late, and the button is taken away.
    await _object(h, notice, user=OWNER)
    assert (await _ephemeral(h, 1)).startswith("Too late: it was already reclaimed.")
    await h.standin.wait_for(lambda: _object_button(h.standin.messages[notice.ts]) is None)


async def _is(h: SlackHarness, run_id: str, status: RunStatus) -> bool:
    return (await h.app.store.get_run(run_id)).status is status


async def test_the_owner_objects_and_keeps_the_workload(h: SlackHarness) -> None:
    pod = next(p.name for p in h.sim.snapshot().pods if p.name.startswith(SANDBOX))
    run = await _alert(h, "research", pod)
    notice = await _in_grace(h, run.id)

    await _object(h, notice, user="U0STRANGER")  # not the owner, not an approver
    assert (await _ephemeral(h, 1)).startswith(f"Only <@{OWNER}> or an approver")
    assert _object_button(h.standin.messages[notice.ts]) is not None

    await _object(h, notice, user=OWNER)
    assert (await _ephemeral(h, 2)).startswith("Objection recorded: Deployment/vllm-sandbox")
    await h.standin.wait_for(lambda: _object_button(h.standin.messages[notice.ts]) is None)
    edited = h.standin.text_of(h.standin.messages[notice.ts])
    assert f"Kept by <@{OWNER}> at 2026-11-22 09:00 UTC" in edited

    _clock(h).advance(timedelta(seconds=30))  # the grace period's next look
    done = await _settled(h, run.id)
    assert done.status is RunStatus.CANCELLED
    assert done.note.startswith(f"kept by <@{OWNER}>")
    [objection] = [
        e for e in await h.app.store.events(run_id=run.id) if e.kind == "reclaim.objection"
    ]
    assert objection.actor == OWNER
    deployment = await h.sim.kube.workloads.get_workload(
        namespace="research", kind="Deployment", name=SANDBOX
    )
    assert (deployment.replicas, deployment.gpus) == (1, 4)
    assert not [m for m in h.standin.messages.values() if "Approval needed" in m.text]
    thread = " ".join(h.standin.text_of(m) for m in h.standin.thread(notice.thread_ts or ""))
    assert f"<@{OWNER}> objected" in thread


async def test_a_bare_pod_is_deleted_after_approval(h: SlackHarness) -> None:
    run = await _alert(h, "research", "jupyter-bob")
    await _in_grace(h, run.id)
    _clock(h).advance(timedelta(hours=4))
    await _settled(h, run.id)
    await h.click(_approval_id(h), user="U2")
    await until(lambda: _is(h, run.id, RunStatus.SUCCEEDED))
    assert "jupyter-bob" not in {p.name for p in h.sim.snapshot().pods}


async def test_opted_out_and_system_namespace_pods_are_untouched(h: SlackHarness) -> None:
    with h.sim.mutation() as state:
        state.pod("research", "jupyter-chen").labels["gpubot.io/reclaim"] = "false"
        template = state.pod("research", "jupyter-chen")
        state.pods.append(
            SimPod(
                namespace="kube-system",
                name="gpu-validator",
                node="gpu-node-16",
                workload="idle",
                container="main",
                created_at=template.created_at,
                gpu_indices=[0],
            )
        )
    for namespace, pod, why in (
        (
            "research",
            "jupyter-chen",
            "has opted out of reclamation (label gpubot.io/reclaim=false)",
        ),
        ("kube-system", "gpu-validator", "is in the system namespace kube-system"),
    ):
        run = await _alert(h, namespace, pod)
        done = await _settled(h, run.id)
        assert done.status is RunStatus.CANCELLED
        assert done.note == f"not reclaimed: {namespace}/{pod} {why}"
        assert pod in {p.name for p in h.sim.snapshot().pods}
    texts = " ".join(m.text for m in h.standin.messages.values())
    assert "Not reclaiming: research/jupyter-chen has opted out" in texts
    assert "Not reclaiming: kube-system/gpu-validator is in the system namespace" in texts
    assert not [m for m in h.standin.messages.values() if _object_button(m) is not None]
    assert not [m for m in h.standin.messages.values() if "Approval needed" in m.text]
