"""workload.reclaim on the simulated cluster: a Deployment to zero with the way back recorded,
a bare pod deleted, the audit entry the idle report sums, crash recovery through check(),
dry runs, and what changes during the grace period (opt-out, a pod that went away)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from reclaim_harness import BARE, OWNER, SANDBOX, Reclaimer, reclaimer

from gpubot.domain.runbooks.runs import RunStatus, StepStatus
from gpubot.engine.service import GpubotService

CONTRACT = ("gpus_released", "gpu_model", "namespace", "workload", "idle_hours", "reclaimed_at")


async def _approved(r: Reclaimer, run_id: str, *, approver: str = "U1") -> None:
    """Let the grace period run out, then approve the reclamation."""
    await r.in_grace(run_id)
    r.clock.advance(timedelta(hours=4))
    assert (await r.ended(run_id)).status is RunStatus.WAITING_APPROVAL
    ask = await r.asked()
    await r.service.vote(approval_id=ask.approval_id, user=approver, decision="approve")
    await r.service.wait_idle()


async def test_a_deployment_is_scaled_to_zero_and_its_gpus_freed(tmp_path: Path) -> None:
    """Approved: 0 replicas, the pod gone, its 4 GPUs free, the previous count on the
    Deployment; the thread says how to restore, and restoring works."""
    async with reclaimer(tmp_path) as r:
        pod = r.pod_of(SANDBOX)
        node = "gpu-node-12"
        before = len(r.cluster.snapshot().free_gpus(node))
        run = await r.alert(pod)
        await _approved(r, run.id)
        assert (await r.store.get_run(run.id)).status is RunStatus.SUCCEEDED
        w = await r.cluster.kube.workloads.get_workload(
            namespace="research", kind="Deployment", name=SANDBOX
        )
        assert (w.replicas, w.pods, w.gpus) == (0, 0, 0)
        assert w.annotations["gpubot.io/reclaimed-from-replicas"] == "1"
        assert w.annotations["gpubot.io/reclaimed-by"].startswith("U1: gpubot idle-reclaim")
        assert pod not in r.pod_names()
        assert len(r.cluster.snapshot().free_gpus(node)) == before + 4
        samples = await r.cluster.metrics.query(promql='DCGM_FI_DEV_GPU_UTIL{namespace="research"}')
        assert {s.labels["pod"] for s in samples}.isdisjoint({pod})
        text = r.notifier.text()
        assert f"<@{OWNER}> Reclaimed Deployment/vllm-sandbox in research: 4 GPU(s)" in text
        assert "freeing 4 GPU-hours for every hour it stays down (96 a day)" in text
        assert "`kubectl -n research scale deployment/vllm-sandbox --replicas=1`" in text
        # The recorded way back works: one replica again, on GPUs the scheduler finds.
        assert (
            await r.cluster.kube.workloads.scale_workload(
                namespace="research", kind="Deployment", name=SANDBOX, replicas=1
            )
            == 0
        )
        again = await r.cluster.kube.workloads.get_workload(
            namespace="research", kind="Deployment", name=SANDBOX
        )
        assert (again.replicas, again.pods, again.gpus) == (1, 1, 4)


async def test_the_audit_entry_carries_what_the_report_sums(tmp_path: Path) -> None:
    """step.finished of action workload.reclaim: actor = the approver, result = the contract."""
    async with reclaimer(tmp_path) as r:
        run = await r.alert(r.pod_of(SANDBOX))
        await _approved(r, run.id, approver="U2")
        [entry] = [
            e for e in await r.events(run.id, "step.finished") if e.action == "workload.reclaim"
        ]
        assert entry.actor == "U2"
        assert entry.step == "reclaim"
        assert not entry.dry_run
        result = dict(entry.result)
        assert set(CONTRACT) <= set(result)
        assert result["gpus_released"] == 4
        assert result["gpu_model"] == "NVIDIA H100 80GB HBM3"  # the alert's modelName
        assert (result["namespace"], result["workload"]) == ("research", "Deployment/vllm-sandbox")
        assert result["idle_hours"] == 0.0  # the alert does not say
        assert result["reclaimed_at"] == "2026-11-22T13:00:00+00:00"  # 4 h grace on the clock
        assert await r.store.verify() == []


async def test_a_bare_pod_is_deleted(tmp_path: Path) -> None:
    async with reclaimer(tmp_path) as r:
        run = await r.command(BARE, idle_hours="6.5")
        await _approved(r, run.id)
        assert BARE not in r.pod_names()
        [done] = [s for s in await r.store.steps(run.id) if s.step_id == "reclaim"]
        assert (done.output["gpus_released"], done.output["workload"]) == (2, "Pod/jupyter-bob")
        assert done.output["idle_hours"] == 6.5
        assert done.output["gpu_model"] == "NVIDIA H100 80GB HBM3"  # from the node's label
        assert "re-create research/jupyter-bob from its manifest" in r.notifier.text()
        assert "idle for about 6.5 h" in r.notifier.text()
        assert "$156 while idle so far" in r.notifier.text()  # 2 GPUs x $12 x 6.5 h


async def test_an_opt_out_added_during_the_grace_period_is_honoured(tmp_path: Path) -> None:
    async with reclaimer(tmp_path) as r:
        run = await r.command(BARE)
        await r.in_grace(run.id)
        with r.cluster.mutation() as state:
            state.pod("research", BARE).labels["gpubot.io/reclaim"] = "false"
        r.clock.advance(timedelta(hours=4))
        done = await r.ended(run.id)
        assert done.status is RunStatus.CANCELLED
        assert "opted out of reclamation (label gpubot.io/reclaim=false)" in done.note
        assert r.notifier.of("ask_approval") == []
        assert BARE in r.pod_names()


async def test_an_opt_out_added_while_approval_waits_is_honoured(tmp_path: Path) -> None:
    """The reclaim step checks the pod again when it runs, after the approval."""
    async with reclaimer(tmp_path) as r:
        run = await r.command(BARE)
        await r.in_grace(run.id)
        r.clock.advance(timedelta(hours=4))
        await r.ended(run.id)
        with r.cluster.mutation() as state:
            state.pod("research", BARE).annotations["gpubot.io/reclaim"] = "false"
        ask = await r.asked()
        await r.service.vote(approval_id=ask.approval_id, user="U1", decision="approve")
        await r.service.wait_idle()
        done = await r.store.get_run(run.id)
        assert done.status is RunStatus.CANCELLED
        assert "annotation gpubot.io/reclaim=false" in done.note
        assert BARE in r.pod_names()


async def test_a_pod_gone_during_the_grace_period_ends_the_run(tmp_path: Path) -> None:
    async with reclaimer(tmp_path) as r:
        run = await r.command(BARE)
        await r.in_grace(run.id)
        await r.cluster.kube.delete_pod(namespace="research", name=BARE, grace_seconds=0)
        r.clock.advance(timedelta(hours=4))
        done = await r.ended(run.id)
        assert (done.status, done.note) == (
            RunStatus.CANCELLED,
            "research/jupyter-bob is gone; nothing to reclaim",
        )


async def _crash_in_reclaim(r: Reclaimer, run_id: str, *, took_effect: bool) -> None:
    """Rewind to a crash inside the approved reclaim step, before or after its scale."""
    states = {s.step_id: s for s in await r.store.steps(run_id)}
    step = states["reclaim"]
    await r.store.save_step(replace(step, status=StepStatus.RUNNING, output={}, finished_at=None))
    await r.store.save_step(replace(states["done"], status=StepStatus.PENDING, output={}, args={}))
    await r.store.update_run(run_id, status=RunStatus.RUNNING, note="", now=r.clock.now())
    if not took_effect:
        await r.cluster.kube.workloads.scale_workload(
            namespace="research", kind="Deployment", name=SANDBOX, replicas=1
        )


async def test_after_a_crash_check_sees_the_scale_took_effect(tmp_path: Path) -> None:
    async with reclaimer(tmp_path) as r:
        run = await r.alert(r.pod_of(SANDBOX))
        await _approved(r, run.id)
        await _crash_in_reclaim(r, run.id, took_effect=True)
        restarted = GpubotService(r.service.e)
        await restarted.background.recover()
        await restarted.wait_idle()
        assert (await r.store.get_run(run.id)).status is RunStatus.SUCCEEDED
        [recovered] = await r.events(run.id, "step.recovered")
        assert recovered.result["check"] == "done"
        [*_, finished] = [e for e in await r.events(run.id, "step.finished") if e.step == "reclaim"]
        assert (finished.result["gpus_released"], finished.result["previous_replicas"]) == (4, 1)
        assert (await r.steps(run.id))["done"] == "succeeded"


async def test_after_a_crash_before_the_scale_it_runs_again(tmp_path: Path) -> None:
    async with reclaimer(tmp_path) as r:
        run = await r.alert(r.pod_of(SANDBOX))
        await _approved(r, run.id)
        await _crash_in_reclaim(r, run.id, took_effect=False)
        restarted = GpubotService(r.service.e)
        await restarted.background.recover()
        await restarted.wait_idle()
        assert (await r.store.get_run(run.id)).status is RunStatus.SUCCEEDED
        [recovered] = await r.events(run.id, "step.recovered")
        assert recovered.result["check"] == "not_done"
        w = await r.cluster.kube.workloads.get_workload(
            namespace="research", kind="Deployment", name=SANDBOX
        )
        assert w.replicas == 0


async def test_a_dry_run_plans_every_step_and_changes_nothing(tmp_path: Path) -> None:
    """`/gpu run idle-reclaim … --dry-run`: no notice, no wait, no approval, no scale."""
    async with reclaimer(tmp_path) as r:
        _plan, run = await r.service.start_command_run(
            runbook="idle-reclaim",
            args={"namespace": "research", "pod": r.pod_of(SANDBOX)},
            requested_by="U3",
            cluster="sim",
            dry_run=True,
        )
        assert run is not None
        await r.service.wait_idle()
        assert (await r.store.get_run(run.id)).status is RunStatus.SUCCEEDED
        steps = await r.steps(run.id)
        assert steps == {
            "guard": "succeeded",
            "notify": "succeeded",
            "grace": "succeeded",
            "reclaim": "succeeded",
            "done": "skipped",
        }
        assert r.buttons() == []
        assert r.clock.slept == []
        w = await r.cluster.kube.workloads.get_workload(
            namespace="research", kind="Deployment", name=SANDBOX
        )
        assert w.replicas == 1
        assert "scale Deployment/vllm-sandbox in research from 1 to 0" in r.notifier.text()
