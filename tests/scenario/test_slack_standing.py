"""When a run stops, its Slack thread says where the node or workload stands, read live.

A denied drain, a cancel, an expired approval, a failed verification handed to a person, a
run that never touched its node, a node cordoned by someone else, and a node that cannot be
read: each ending posts one message saying what is still cordoned or tainted and the
command that releases it, with outside text escaped.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest
from slack_harness import CHANNEL, FIXTURES, SlackHarness

from gpubot.backends.simulated.scenarios import fail_diag, idle_alert, inject_xid
from gpubot.cli.ops import build_cli_app
from gpubot.domain.control.approvals import ApprovalStatus
from gpubot.domain.fleet.cluster import NodeInfo
from gpubot.domain.runbooks.runs import Run, RunStatus
from gpubot.errors import PermanentStepError

XID79 = (FIXTURES / "xid79_firing.json").read_bytes()
NODE = "gpu-node-07"  # the fixture alert's Hostname, GPU 3
RELEASE = f"/gpu run release-node node={NODE} xid=79"
STANDS = "Where things stand"


pytestmark = pytest.mark.usefixtures("clean_env")


async def xid79_at_drain(h: SlackHarness) -> tuple[Run, str]:
    """The XID 79 alert in: the node is cordoned and tainted, the drain waits for approval."""
    inject_xid(h.sim, node=NODE, gpu=3)
    reply = await h.client.post(
        "/alertmanager", content=XID79, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 200
    await h.settle()
    [run] = [r for r in await h.app.store.list_runs() if r.runbook == "xid79"]
    return run, await pending(h, run)


async def pending(h: SlackHarness, run: Run) -> str:
    """The run's one pending approval request, once the run has asked for it."""
    for _ in range(500):
        await h.settle()
        asked = [
            a.id
            for a in await h.app.store.approvals_for(run.id)
            if a.status is ApprovalStatus.PENDING
        ]
        if asked:
            [approval] = asked
            return approval
        await asyncio.sleep(0.01)
    raise AssertionError(f"run {run.id} asks for no approval")


async def decide(h: SlackHarness, approval_id: str, *, user: str, approve: bool) -> None:
    """Click, then wait until the click (handled after the ack) has decided the request and
    the run has moved on."""
    await h.click(approval_id, user=user, approve=approve)
    request = await h.app.store.get_approval(approval_id)
    for _ in range(500):
        run = await h.app.store.get_run(request.run_id)
        asked = {a.id for a in await h.app.store.approvals_for(run.id)} - {approval_id}
        if run.status is not RunStatus.WAITING_APPROVAL or asked:
            break
        await asyncio.sleep(0.01)
    await h.settle()


async def command_run(h: SlackHarness, text: str, runbook: str) -> Run:
    """A `/gpu` command from U1, and the run it started (handled after the ack)."""
    await h.slash(text, user="U1")
    for _ in range(500):
        await h.settle()
        if runs := [r for r in await h.app.store.list_runs() if r.runbook == runbook]:
            return runs[0]
        await asyncio.sleep(0.01)
    raise AssertionError(f"no {runbook} run started")


def standing_messages(h: SlackHarness) -> list[str]:
    """The texts (blocks and fallback) of every message in the channel that says where
    things stand."""
    texts = [h.standin.text_of(m) for m in h.standin.messages.values() if m.channel == CHANNEL]
    return [t for t in texts if STANDS in t]


async def test_denied_drain_says_the_node_stays_quarantined_and_how_to_release_it(
    h: SlackHarness,
) -> None:
    """Deny the drain: one end message says the node is still cordoned by gpubot and tainted
    gpubot.io/xid=79:NoSchedule, that no drain ran, and gives release-node."""
    run, approval = await xid79_at_drain(h)
    await decide(h, approval, user="U2", approve=False)
    assert (await h.app.store.get_run(run.id)).status is RunStatus.CANCELLED
    [said] = standing_messages(h)
    assert f"This run cordoned {NODE}, added taint gpubot.io/xid=79:NoSchedule." in said
    assert f"{NODE} is still cordoned by gpubot, tainted gpubot.io/xid=79:NoSchedule" in said
    assert RELEASE in said
    assert "drained it" not in said


async def test_cancel_mid_way_says_the_same(h: SlackHarness) -> None:
    """A cancel (the service call the break-glass CLI makes) while the drain waits: the
    cancel message says the node stays cordoned and tainted and gives release-node."""
    run, _ = await xid79_at_drain(h)
    await h.app.service.cancel(run_id=run.id, user="U1", reason="handled by hand")
    await h.settle()
    [said] = standing_messages(h)
    assert f"Run {run.id} cancelled by U1: handled by hand" in said
    assert "still cordoned by gpubot" in said
    assert "gpubot.io/xid=79:NoSchedule" in said
    assert RELEASE in said


async def test_cancel_from_the_break_glass_cli_is_told_in_the_thread_by_the_leader(
    h: SlackHarness,
) -> None:
    """A cancel taken in a CLI process (its own app over the same store, no chat): the
    serving leader reads it from the audit trail and posts, once, who cancelled and where
    the node stands."""
    run, _ = await xid79_at_drain(h)
    await h.app.service.background.follow()  # the leader's first look: the point it follows from
    cli = build_cli_app(h.app.settings, clock=h.clock)
    try:
        await cli.service.cancel(
            run_id=run.id, user="U2", reason="by hand", via={"via": "cli", "account": "bob"}
        )
    finally:
        await cli.aclose()
    assert standing_messages(h) == []  # the CLI process told no chat
    await h.app.service.background.follow()
    await h.app.service.background.follow()  # nothing new: told once
    await h.settle()
    [said] = standing_messages(h)
    assert f"Run {run.id} cancelled by U2: by hand (break-glass CLI)" in said
    assert "still cordoned by gpubot" in said
    assert RELEASE in said


async def test_expired_approval_says_where_the_node_stands(h: SlackHarness) -> None:
    """Nobody answers the drain's approval: on the fake clock it expires at the next tick,
    and the run's end says the node is still quarantined."""
    run, _ = await xid79_at_drain(h)
    h.clock.advance(timedelta(minutes=31))
    await h.app.service.background.tick()
    await h.settle()
    ended = await h.app.store.get_run(run.id)
    assert ended.status is RunStatus.CANCELLED
    assert "expired" in ended.note
    [said] = standing_messages(h)
    assert "still cordoned by gpubot" in said
    assert RELEASE in said


async def test_needs_human_after_failed_diagnostics_says_the_node_is_quarantined(
    h: SlackHarness,
) -> None:
    """The reset works but DCGM diagnostics fail: the run pauses for a person, and the pause
    message says the node was drained and stays cordoned and tainted."""
    fail_diag(h.sim, node=NODE, gpu=3, test="Memory", message="GPU 3 memory error")
    run, approval = await xid79_at_drain(h)
    for user in ("U2", "U1"):  # drain, then reset
        await decide(h, approval, user=user, approve=True)
        current = await h.app.store.get_run(run.id)
        if current.status is RunStatus.WAITING_APPROVAL:
            approval = await pending(h, run)
    assert (await h.app.store.get_run(run.id)).status is RunStatus.NEEDS_HUMAN
    [said] = standing_messages(h)
    assert "Run paused at step diag-handoff" in said
    assert "drained it" in said
    assert "reset GPU 3" in said
    assert "still cordoned by gpubot" in said
    assert RELEASE in said


async def test_run_denied_before_touching_the_node_says_nothing_was_changed(
    h: SlackHarness,
) -> None:
    """A reboot request for a node in service, denied at its first (gated) step: the run
    changed nothing, and there is nothing to release."""
    run = await command_run(h, "run node-handoff node=gpu-node-03 to=reboot", "node-handoff")
    await decide(h, await pending(h, run), user="U2", approve=False)
    [said] = standing_messages(h)
    assert "This run changed nothing on gpu-node-03." in said
    assert "gpu-node-03 is schedulable (not cordoned), without gpubot taints." in said
    assert "Nothing to release." in said
    assert "release-node node=" not in said


async def test_foreign_cordon_names_its_owner_and_escapes_their_text(h: SlackHarness) -> None:
    """A node someone else cordoned (their reason holds Slack markup): the end message names
    them, offers `kubectl uncordon`, not gpubot's release, and shows their text inert."""
    await h.sim.kube.set_unschedulable(
        node="gpu-node-05", value=True, actor="alice", reason="<!channel> BIOS & firmware"
    )
    run = await command_run(h, "run gpu-reset node=gpu-node-05 gpu=0", "gpu-reset")
    await decide(h, await pending(h, run), user="U2", approve=False)
    [said] = standing_messages(h)
    assert "cordoned by alice (&lt;!channel&gt; BIOS &amp; firmware), not by gpubot" in said
    assert "The cordon is alice's: gpubot does not release it." in said
    assert "kubectl uncordon gpu-node-05" in said
    assert "release-node" not in said
    assert "<!channel>" not in said


async def test_unreadable_node_falls_back_to_the_runs_own_steps(
    h: SlackHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The node cannot be read when the drain is denied: the message says so and gives the
    release from what the run's own steps did (it cordoned and tainted the node)."""
    _, approval = await xid79_at_drain(h)

    async def unreachable(*, node: str, cached: bool = False) -> NodeInfo:
        raise PermanentStepError("the API server is unreachable")

    monkeypatch.setattr(h.sim.kube, "get_node", unreachable)
    await decide(h, approval, user="U2", approve=False)
    [said] = standing_messages(h)
    assert f"Could not read {NODE} live (the API server is unreachable)" in said
    assert "added taint gpubot.io/xid=79:NoSchedule" in said
    assert RELEASE in said


async def test_denied_reclaim_says_the_workload_was_not_touched(h: SlackHarness) -> None:
    """Idle-GPU reclamation denied at its approval (after the grace, which the fake clock
    passes at once): the end says the workload keeps running and offers no restore."""
    pod = next(p.name for p in h.sim.snapshot().pods if p.name.startswith("vllm-sandbox"))
    body = json.dumps(idle_alert(h.sim, namespace="research", pod=pod)).encode()
    reply = await h.client.post(
        "/alertmanager", content=body, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 200
    await h.settle()
    [run] = [r for r in await h.app.store.list_runs() if r.runbook == "idle-reclaim"]
    await decide(h, await pending(h, run), user="U2", approve=False)
    [said] = standing_messages(h)
    assert "This run changed nothing: the workload keeps running as it was." in said
    assert "kubectl" not in said.split(STANDS, 1)[1]
    deployment = await h.sim.kube.workloads.get_workload(
        namespace="research", kind="Deployment", name="vllm-sandbox"
    )
    assert deployment.replicas == 1
