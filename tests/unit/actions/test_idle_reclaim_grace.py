"""The grace period: the owner's notice, an objection that keeps the workload (durably, also
across a restart), who may object, a late objection, and the grace running out on time."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from reclaim_harness import APPROVERS, BARE, OWNER, SANDBOX, Reclaimer, reclaimer

from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.store import open_store
from gpubot.domain.fleet.reclaim import OBJECTION_KIND, ReclaimPolicy
from gpubot.domain.runbooks.runs import RunStatus
from gpubot.engine.service import GpubotService
from gpubot.errors import ApprovalError, ObjectionClosed


async def _sandbox_in_grace(r: Reclaimer) -> str:
    run = await r.alert(r.pod_of(SANDBOX))
    await r.in_grace(run.id)
    return run.id


async def _replicas(r: Reclaimer) -> int | None:
    w = await r.cluster.kube.workloads.get_workload(
        namespace="research", kind="Deployment", name=SANDBOX
    )
    return w.replicas


async def test_the_owner_is_told_what_when_and_how_to_object(tmp_path: Path) -> None:
    """The notice mentions the owner from reclaim.owners and says the workload, the GPUs,
    the cost per hour, when the grace period ends, and carries the run's Object button."""
    async with reclaimer(tmp_path) as r:
        run_id = await _sandbox_in_grace(r)
        [notice] = [m for m in r.notifier.messages if m.title.startswith("Idle GPUs")]
        text = notice.plain()
        assert notice.title == "Idle GPUs: Deployment/vllm-sandbox in research will be reclaimed"
        assert text.count(f"<@{OWNER}>") == 1
        assert "holds 4 x NVIDIA H100 80GB HBM3" in text
        assert "Cost: $48.00 per hour" in text  # 4 GPUs at $12
        assert "Grace period ends: 2026-11-22 13:00 UTC" in text
        assert "scaled to 0 replicas (from 1)" in text
        assert "gpubot.io/reclaim=false" in text
        [button] = r.buttons()
        assert (button.text, button.action, button.value) == ("Object — keep it", "object", run_id)
        assert await _replicas(r) == 1


async def test_an_objection_in_the_grace_period_keeps_the_workload(tmp_path: Path) -> None:
    """The owner clicks: the run ends cancelled "kept by", audited with the owner as actor;
    no approval is asked and the Deployment keeps its replica."""
    async with reclaimer(tmp_path) as r:
        run_id = await _sandbox_in_grace(r)
        kept = await r.service.object(run_id=run_id, user=OWNER)
        assert kept.workload == "Deployment/vllm-sandbox"
        r.clock.advance(timedelta(seconds=30))  # the next look for objections
        run = await r.ended(run_id)
        assert run.status is RunStatus.CANCELLED
        assert run.note == f"kept by <@{OWNER}>: the owner objected during the grace period"
        assert (await r.steps(run_id))["reclaim"] == "cancelled"
        [objection] = await r.events(run_id, OBJECTION_KIND)
        assert (objection.actor, objection.step, objection.result["kept_by"]) == (
            OWNER,
            "grace",
            OWNER,
        )
        assert f"<@{OWNER}> objected" in r.notifier.text()
        assert r.notifier.of("ask_approval") == []
        assert await _replicas(r) == 1
        assert await r.store.verify() == []


async def test_the_grace_period_ends_on_time_and_approval_is_asked(tmp_path: Path) -> None:
    """Nobody objects: 4 h after the grace step started (fake clock), not a second earlier,
    an approver is asked; nothing is scaled before the approval."""
    async with reclaimer(tmp_path) as r:
        run_id = await _sandbox_in_grace(r)
        r.clock.advance(timedelta(hours=3, minutes=59))
        await r.until(lambda: r.clock.sleepers > 0)
        assert (await r.steps(run_id))["grace"] == "running"
        r.clock.advance(timedelta(minutes=1))
        run = await r.ended(run_id)
        assert run.status is RunStatus.WAITING_APPROVAL
        [grace] = [s for s in await r.store.steps(run_id) if s.step_id == "grace"]
        assert grace.output["waited_seconds"] == 4 * 3600
        assert grace.output["objected"] is False
        ask = await r.asked()
        assert "scale Deployment/vllm-sandbox in research from 1 to 0 replicas" in ask.text
        assert await _replicas(r) == 1


async def test_a_grace_given_to_the_command_overrides_the_config(tmp_path: Path) -> None:
    async with reclaimer(tmp_path, policy=ReclaimPolicy(grace=timedelta(hours=8))) as r:
        run = await r.command(BARE, grace="30m")
        await r.in_grace(run.id)
        assert "Grace period ends: 2026-11-22 09:30 UTC" in r.notifier.text()
        r.clock.advance(timedelta(minutes=30))
        assert (await r.ended(run.id)).status is RunStatus.WAITING_APPROVAL


@pytest.mark.parametrize(
    ("user", "groups", "allowed"),
    [
        (OWNER, (), True),  # the owner named by reclaim.owners
        ("U1", (), True),  # an approver of the reclaim step (group oncall)
        ("U8", ("S9",), True),  # in the approver group's Slack user group
        ("U8", (), False),  # anyone else
    ],
)
async def test_who_may_object(
    tmp_path: Path, user: str, groups: tuple[str, ...], allowed: bool
) -> None:
    async with reclaimer(tmp_path) as r:
        run_id = await _sandbox_in_grace(r)

        async def member_of(usergroup: str) -> bool:
            return usergroup in groups

        if allowed:
            await r.service.object(run_id=run_id, user=user, member_of=member_of)
            assert len(await r.events(run_id, OBJECTION_KIND)) == 1
            return
        with pytest.raises(ApprovalError, match=f"Only <@{OWNER}> or an approver"):
            await r.service.object(run_id=run_id, user=user, member_of=member_of)
        assert await r.events(run_id, OBJECTION_KIND) == []


async def test_an_owner_user_group_member_may_object(tmp_path: Path) -> None:
    """An owner given as `<!subteam^S…>` (here by the pod's annotation): its members may."""
    async with reclaimer(tmp_path) as r:
        with r.cluster.mutation() as state:
            state.pod("research", BARE).annotations["gpubot.io/owner"] = "<!subteam^S0ML>"
        run = await r.command(BARE)
        await r.in_grace(run.id)
        assert "<!subteam^S0ML>: Pod/jupyter-bob in research" in r.notifier.text()

        async def member_of(usergroup: str) -> bool:
            return usergroup == "S0ML"

        await r.service.object(run_id=run.id, user="U0BOB", member_of=member_of)
        r.clock.advance(timedelta(minutes=1))
        assert (await r.ended(run.id)).note.startswith("kept by <@U0BOB>")
        assert BARE in r.pod_names()


async def test_a_late_or_second_objection_changes_nothing(tmp_path: Path) -> None:
    """After the grace period the objection is refused with why (approval pending); after a
    reclamation it says so and how to restore; a second objection is refused too."""
    async with reclaimer(tmp_path) as r:
        run_id = await _sandbox_in_grace(r)
        r.clock.advance(timedelta(hours=4))
        await r.ended(run_id)
        with pytest.raises(ObjectionClosed, match="waits for approval; ask an approver to Deny"):
            await r.service.object(run_id=run_id, user=OWNER)
        ask = await r.asked()
        await r.service.vote(approval_id=ask.approval_id, user="U1", decision="approve")
        await r.service.wait_idle()
        assert (await r.store.get_run(run_id)).status is RunStatus.SUCCEEDED
        with pytest.raises(ObjectionClosed, match=r"already reclaimed.*--replicas=1"):
            await r.service.object(run_id=run_id, user=OWNER)
        assert await r.events(run_id, OBJECTION_KIND) == []
    (tmp_path / "again").mkdir()
    async with reclaimer(tmp_path / "again") as r:
        run_id = await _sandbox_in_grace(r)
        await r.service.object(run_id=run_id, user="U1")
        with pytest.raises(ObjectionClosed, match="Already kept: <@U1> objected first"):
            await r.service.object(run_id=run_id, user=OWNER)
        with pytest.raises(ApprovalError, match="does not exist"):
            await r.service.object(run_id="run-nope", user=OWNER)


async def test_an_objection_survives_a_restart(tmp_path: Path) -> None:
    """Recorded while the bot is down: the restarted bot's grace step finds it at once."""
    cluster = SimulatedCluster.default(state_path=tmp_path / "sim.json")
    store = open_store(f"sqlite:///{tmp_path}/reclaim.db")
    async with reclaimer(tmp_path, cluster=cluster, store=store) as r:
        run_id = await _sandbox_in_grace(r)
        for task in list(r.service._tasks):  # the process dies mid-wait
            task.cancel()
        await r.service.object(run_id=run_id, user=OWNER)
        restarted = GpubotService(r.service.e)
        r.clock.slept.clear()
        await restarted.background.recover()
        await restarted.wait_idle()
        run = await r.store.get_run(run_id)
        assert run.status is RunStatus.CANCELLED
        assert run.note.startswith(f"kept by <@{OWNER}>")
        assert r.clock.slept == []  # no wait at all after the restart
        assert await _replicas(r) == 1


async def test_a_restart_does_not_extend_the_grace_period(tmp_path: Path) -> None:
    """Down for an hour at 3 h into a 4 h grace: approval is asked 1 h after the restart,
    counted from the grace step's first start, not 4 h later."""
    async with reclaimer(tmp_path) as r:
        run_id = await _sandbox_in_grace(r)
        for task in list(r.service._tasks):
            task.cancel()
        r.clock.advance(timedelta(hours=3))
        restarted = GpubotService(r.service.e)
        await restarted.background.recover()
        await r.until(lambda: r.clock.sleepers > 0)
        r.clock.advance(timedelta(minutes=59))
        await r.until(lambda: r.clock.sleepers > 0)
        assert (await r.steps(run_id))["grace"] == "running"
        r.clock.advance(timedelta(minutes=1))
        assert (await r.ended(run_id)).status is RunStatus.WAITING_APPROVAL
        ask = await r.asked()
        assert ask.approval_id
        assert APPROVERS.admits("U1")
