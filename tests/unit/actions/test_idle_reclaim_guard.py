"""The idle-reclaim guard: opted-out pods, system namespaces, young pods and Jobs are never
touched. A refusal ends the run cleanly (cancelled with the reason, audited, said in the
thread); nothing else runs and nobody is notified."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from freezegun import freeze_time
from reclaim_harness import BARE, SANDBOX, Reclaimer, reclaimer

from gpubot.backends.simulated import SimPod, SimulatedCluster
from gpubot.config import load_settings
from gpubot.domain.fleet.cluster import PodInfo
from gpubot.domain.fleet.reclaim import (
    SYSTEM_NAMESPACES,
    ReclaimPolicy,
    owner_of,
    parse_owner,
    refusal,
)
from gpubot.domain.runbooks.runs import RunStatus
from gpubot.engine.clock import SystemClock
from gpubot.errors import ConfigError
from gpubot.loaded_rules import build_reclaim


async def _refused(r: Reclaimer, run_id: str) -> str:
    """The run ended cancelled at the guard; returns its note. Asserts nothing else ran."""
    run = await r.ended(run_id)
    assert run.status is RunStatus.CANCELLED
    steps = await r.steps(run_id)
    assert steps == {
        "guard": "cancelled",
        "notify": "cancelled",
        "grace": "cancelled",
        "reclaim": "cancelled",
        "done": "cancelled",
    }
    assert r.buttons() == []  # no owner notice
    assert r.notifier.of("ask_approval") == []
    [stopped] = await r.events(run_id, "step.stopped")
    assert stopped.step == "guard"
    assert stopped.result["reason"] == run.note
    [cancelled] = await r.events(run_id, "run.cancelled")
    assert cancelled.result["reason"] == run.note
    assert not await r.events(run_id, "step.failed")
    assert f"Run {run_id} (idle-reclaim) cancelled: {run.note}" in r.notifier.text()
    return run.note


def _annotate(cluster: SimulatedCluster, prefix: str, **changes: dict[str, str]) -> str:
    with cluster.mutation() as state:
        [pod] = [p for p in state.pods if p.namespace == "research" and p.name.startswith(prefix)]
        pod.labels.update(changes.get("labels", {}))
        pod.annotations.update(changes.get("annotations", {}))
        return pod.name


@pytest.mark.parametrize("where", ["labels", "annotations"])
async def test_an_opted_out_pod_is_left_alone(tmp_path: Path, where: str) -> None:
    """`gpubot.io/reclaim: "false"` as a label or an annotation: the run ends at the guard."""
    async with reclaimer(tmp_path) as r:
        pod = _annotate(r.cluster, SANDBOX, **{where: {"gpubot.io/reclaim": "false"}})
        run = await r.alert(pod)
        note = await _refused(r, run.id)
        kind = where.removesuffix("s")
        assert note == (
            f"not reclaimed: research/{pod} has opted out of reclamation "
            f"({kind} gpubot.io/reclaim=false)"
        )
        assert f"Not reclaiming: research/{pod} has opted out" in r.notifier.text()
        sandbox = await r.cluster.kube.workloads.get_workload(
            namespace="research", kind="Deployment", name=SANDBOX
        )
        assert (sandbox.replicas, sandbox.gpus) == (1, 4)


async def test_the_opt_out_key_is_configurable(tmp_path: Path) -> None:
    """reclaim.opt_out_key: the operator's own key counts, and the default one then does not."""
    policy = ReclaimPolicy(opt_out_key="example.com/keep-gpus")
    async with reclaimer(tmp_path, policy=policy) as r:
        _annotate(r.cluster, BARE, annotations={"example.com/keep-gpus": "False"})
        note = await _refused(r, (await r.command(BARE)).id)
        assert "annotation example.com/keep-gpus=False" in note
    (tmp_path / "2").mkdir()
    async with reclaimer(tmp_path / "2", policy=policy) as r:
        _annotate(r.cluster, BARE, annotations={"gpubot.io/reclaim": "false"})
        run = await r.command(BARE)
        await r.in_grace(run.id)  # the default key means nothing under this policy


def _gpu_pod(cluster: SimulatedCluster, namespace: str, name: str) -> None:
    """A pod holding one GPU on the otherwise empty gpu-node-16."""
    with cluster.mutation() as state:
        sim = next(p for p in state.pods if p.name == BARE)
        index = state.free_gpus("gpu-node-16")[0]
        state.pods.append(
            SimPod(
                namespace=namespace,
                name=name,
                node="gpu-node-16",
                workload="idle",
                container="main",
                created_at=sim.created_at,
                gpu_indices=[index],
            )
        )


@pytest.mark.parametrize("namespace", sorted(SYSTEM_NAMESPACES))
async def test_pods_in_each_default_system_namespace_are_left_alone(
    tmp_path: Path, namespace: str
) -> None:
    async with reclaimer(tmp_path) as r:
        _gpu_pod(r.cluster, namespace, "validator")
        note = await _refused(r, (await r.command("validator", namespace=namespace)).id)
        assert note == (
            f"not reclaimed: {namespace}/validator is in the system namespace {namespace}"
        )
        assert "validator" in r.pod_names(namespace)


async def test_the_system_namespaces_are_configurable(tmp_path: Path) -> None:
    policy = ReclaimPolicy(system_namespaces=frozenset({"research"}))
    async with reclaimer(tmp_path, policy=policy) as r:
        assert "system namespace research" in await _refused(r, (await r.command(BARE)).id)


@pytest.mark.parametrize(
    ("age", "refused"),
    [
        (timedelta(minutes=30), True),
        (timedelta(hours=1, minutes=59), True),
        (timedelta(hours=2), False),  # exactly the minimum age: old enough
        (timedelta(days=2), False),
    ],
)
async def test_pods_younger_than_the_minimum_age_are_left_alone(
    tmp_path: Path, age: timedelta, refused: bool
) -> None:
    """reclaim.min_age (default 2 h), against the engine's clock."""
    async with reclaimer(tmp_path) as r:
        with r.cluster.mutation() as state:
            state.pod("research", BARE).created_at = r.clock.now() - age
        run = await r.command(BARE)
        if refused:
            note = await _refused(r, run.id)
            assert "younger than the minimum age 2.0 h" in note
        else:
            await r.in_grace(run.id)


async def test_a_job_is_never_reclaimed(tmp_path: Path) -> None:
    """A Job ends by itself; scaling or deleting it loses work, so the run stops at once."""
    async with reclaimer(tmp_path) as r:
        pod = r.pod_of("ablation-sweep")
        note = await _refused(r, (await r.command(pod)).id)
        assert note == (
            f"not reclaimed: research/{pod} belongs to Job/ablation-sweep; gpubot scales "
            "Deployments and StatefulSets and deletes bare pods, never a Job: a human must decide"
        )
        assert pod in r.pod_names()


async def test_a_pod_that_is_gone_ends_the_run_cleanly(tmp_path: Path) -> None:
    async with reclaimer(tmp_path) as r:
        note = await _refused(r, (await r.command("jupyter-nobody")).id)
        assert note == "research/jupyter-nobody is gone; nothing to reclaim"


async def test_the_plan_shows_the_refusal_before_anything_runs(tmp_path: Path) -> None:
    async with reclaimer(tmp_path) as r:
        _annotate(r.cluster, BARE, labels={"gpubot.io/reclaim": "false"})
        plan = await r.service.plan(
            runbook="idle-reclaim", args={"namespace": "research", "pod": BARE}, cluster="sim"
        )
        guard = plan.steps[0]
        assert guard.summary.startswith("leave it alone: research/jupyter-bob has opted out")
        assert await r.store.list_runs() == []


# -- the rules themselves (pure) ---------------------------------------------------------


def _pod(**fields: object) -> PodInfo:
    base: dict[str, object] = {"namespace": "research", "name": "nb", "node": "n1"}
    return PodInfo(**{**base, **fields})


@freeze_time("2026-11-22 09:00:00")
def test_min_age_follows_frozen_time() -> None:
    """With freezegun: a pod 90 minutes old is too young now, and old enough an hour later."""
    clock = SystemClock()
    pod = _pod(created_at=clock.now() - timedelta(minutes=90))
    assert "younger than the minimum age" in (refusal(ReclaimPolicy(), pod, now=clock.now()) or "")
    with freeze_time("2026-11-22 10:00:00"):
        assert refusal(ReclaimPolicy(), pod, now=SystemClock().now()) is None


def test_a_pod_without_a_creation_time_is_left_alone() -> None:
    assert "age is unknown" in (refusal(ReclaimPolicy(), _pod(), now=SystemClock().now()) or "")


def test_the_owner_annotation_wins_over_the_namespace_mapping() -> None:
    policy = ReclaimPolicy(owners={"research": "<!subteam^S0RESEARCH>"}, fallback="<@U0ONCALL>")
    pod = _pod(annotations={"gpubot.io/owner": "<@U0ALICE|alice>"})
    assert owner_of(policy, pod) == parse_owner("U0ALICE", source="annotation")
    team = owner_of(policy, _pod())
    assert (team.mention, team.usergroup, team.source) == (
        "<!subteam^S0RESEARCH>",
        "S0RESEARCH",
        "namespace",
    )
    other = owner_of(policy, _pod(namespace="vision"))
    assert (other.mention, other.user, other.source) == ("<@U0ONCALL>", "U0ONCALL", "fallback")
    plain = owner_of(ReclaimPolicy(fallback="the <b>on-call</b>"), _pod())
    assert (plain.mention, plain.user) == ("the bon-call/b", None)
    assert owner_of(ReclaimPolicy(), _pod()).mention == ""


def test_an_annotation_cannot_page_a_channel() -> None:
    """Only user and user-group ids become mentions; `<!channel>` is ignored, not copied."""
    policy = ReclaimPolicy(owners={"research": "<@U0TEAM>"})
    for sneaky in ("<!channel>", "<!here>", "<#C0123>", "alice@example.com", ""):
        assert owner_of(policy, _pod(annotations={"gpubot.io/owner": sneaky})).user == "U0TEAM"


def test_the_config_section_becomes_the_policy() -> None:
    """`reclaim:` in the config: durations, owners and the report's prices reach the rules."""
    settings = load_settings(
        None,
        reclaim={
            "opt_out_key": "example.com/keep",
            "system_namespaces": ["infra"],
            "min_age": "30m",
            "grace": "1h",
            "owners": {"research": "<!subteam^S0ML|@ml>"},
            "fallback": "the on-call",
            "poll": "10s",
        },
        reports={"idle": {"prices": {"A100": 9.5}}},
    )
    policy = build_reclaim(settings)
    assert policy.opt_out_key == "example.com/keep"
    assert policy.system_namespaces == frozenset({"infra"})
    assert (policy.min_age, policy.grace) == (timedelta(minutes=30), timedelta(hours=1))
    assert (policy.poll_seconds, policy.price("NVIDIA A100-SXM4-80GB")) == (10.0, 9.5)
    assert owner_of(policy, _pod()).usergroup == "S0ML"
    assert build_reclaim(load_settings(None)).system_namespaces == SYSTEM_NAMESPACES


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        ({"owners": {"research": "alice@example.com"}}, "must be <@U…> or <!subteam^S…>"),
        ({"grace": "3d"}, "grace must be between 0 and 24h"),
        ({"opt_out_key": "not a key!"}, "opt_out_key"),
    ],
)
def test_a_bad_reclaim_section_is_one_clear_line(section: dict[str, object], problem: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(problem)) as caught:
        load_settings(None, reclaim=section)
    assert "\n" not in str(caught.value)
