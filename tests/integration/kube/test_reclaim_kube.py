"""Idle-GPU reclamation through the real kubernetes client against the API stand-in: owner
resolution (Pod → ReplicaSet → Deployment, StatefulSet, bare Pod, Job), the /scale
subresource with the replicas recorded on the workload, dry runs, errors, and the RBAC rules."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from kube_standin import KubeStandin

from gpubot.actions.base import ActionContext, ClusterPorts
from gpubot.actions.workloads import Reclaim, ReclaimParams
from gpubot.backends.kube import KubernetesKubeApi
from gpubot.backends.simulated import SimulatedCluster
from gpubot.domain.reclaim import ReclaimPolicy
from gpubot.domain.workloads import RECLAIMED_FROM_ANNOTATION
from gpubot.engine.clock import FakeClock
from gpubot.errors import NotFoundError, PermanentStepError, StopRunError

ROOT = Path(__file__).resolve().parents[3]
OLD = (datetime.now(UTC) - timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _serving(standin: KubeStandin) -> None:
    """research/chat: a Deployment (2 replicas of 4 GPUs) through its ReplicaSet."""
    standin.add_node("gpu-a")
    standin.add_workload("research", "Deployment", "chat", replicas=2)
    standin.add_workload(
        "research",
        "ReplicaSet",
        "chat-7d9f",
        owner=("Deployment", "chat"),
        selector={"app": "chat"},
    )
    for suffix in ("abcde", "fghij"):
        standin.add_pod(
            "research",
            f"chat-7d9f-{suffix}",
            node="gpu-a",
            gpus=4,
            owner=("ReplicaSet", "chat-7d9f"),
            labels={"app": "chat", "pod-template-hash": "7d9f"},
            metadata={"creationTimestamp": OLD},
        )


def _ctx(kube: KubernetesKubeApi, *, actor: str = "U1") -> ActionContext:
    sim = SimulatedCluster()
    return ActionContext(
        cluster=ClusterPorts("lab", kube, sim, sim),
        clock=FakeClock(datetime.now(UTC)),
        actor=actor,
        reason="gpubot idle-reclaim/reclaim run=run-1",
        run_id="run-1",
    )


async def test_a_deployment_pod_resolves_through_its_replicaset(
    standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    """The owner chain is read from the API, and the GPUs of every replica are counted."""
    _serving(standin)
    w = await kube.get_workload_owner(namespace="research", pod="chat-7d9f-abcde")
    assert (w.kind, w.name, w.replicas, w.pods, w.gpus) == ("Deployment", "chat", 2, 2, 8)
    assert standin.calls_of("GET", "/apis/apps/v1/namespaces/research/replicasets/chat-7d9f")
    assert any("labelSelector=app%3Dchat" in c for c in standin.calls_of("GET", "/pods"))


async def test_statefulset_bare_pod_job_and_orphan_replicaset(
    standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    """Each kind resolves to what runs it; a Job is named from the reference, never read."""
    standin.add_node("gpu-a")
    standin.add_workload("ml", "StatefulSet", "llm", replicas=1)
    standin.add_pod(
        "ml", "llm-0", node="gpu-a", gpus=8, owner=("StatefulSet", "llm"), labels={"app": "llm"}
    )
    standin.add_pod("ml", "notebook", node="gpu-a", gpus=1)
    standin.add_pod("ml", "sweep-x1", node="gpu-a", gpus=2, owner=("Job", "sweep"))
    standin.add_workload("ml", "ReplicaSet", "loose", replicas=1)
    standin.add_pod("ml", "loose-q", node="gpu-a", gpus=1, owner=("ReplicaSet", "loose"))
    sts = await kube.get_workload_owner(namespace="ml", pod="llm-0")
    assert (sts.ref, sts.replicas, sts.gpus) == ("StatefulSet/llm", 1, 8)
    bare = await kube.get_workload_owner(namespace="ml", pod="notebook")
    assert (bare.ref, bare.bare_pod, bare.gpus) == ("Pod/notebook", True, 1)
    job = await kube.get_workload_owner(namespace="ml", pod="sweep-x1")
    assert (job.ref, job.scalable, job.bare_pod) == ("Job/sweep", False, False)
    assert not [c for _, c in standin.calls if "/jobs" in c]
    orphan = await kube.get_workload_owner(namespace="ml", pod="loose-q")
    assert (orphan.ref, orphan.scalable) == ("ReplicaSet/loose", False)


async def test_scale_records_the_replicas_then_scales_through_the_subresource(
    standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    """The annotation lands before /scale, so a crash in between leaves the way back."""
    _serving(standin)
    was = await kube.scale_workload(
        namespace="research",
        kind="Deployment",
        name="chat",
        replicas=0,
        annotations={RECLAIMED_FROM_ANNOTATION: "2"},
    )
    assert was == 2
    writes = [p for m, p in standin.calls if m == "PATCH"]
    assert writes == [
        "/apis/apps/v1/namespaces/research/deployments/chat",
        "/apis/apps/v1/namespaces/research/deployments/chat/scale",
    ]
    w = await kube.get_workload(namespace="research", kind="Deployment", name="chat")
    assert (w.replicas, w.pods, w.gpus, w.recorded_replicas) == (0, 0, 0, 2)
    assert standin.pods_on("gpu-a") == []


async def test_a_dry_run_sends_dry_run_all_and_changes_nothing(
    standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    _serving(standin)
    was = await kube.scale_workload(
        namespace="research",
        kind="Deployment",
        name="chat",
        replicas=0,
        annotations={RECLAIMED_FROM_ANNOTATION: "2"},
        dry_run=True,
    )
    assert was == 2
    assert all("dryRun=All" in p for m, p in standin.calls if m == "PATCH")
    w = await kube.get_workload(namespace="research", kind="Deployment", name="chat")
    assert (w.replicas, w.recorded_replicas) == (2, None)


async def test_missing_and_forbidden_workloads_are_one_line_errors(
    standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    _serving(standin)
    with pytest.raises(NotFoundError, match="gone"):
        await kube.get_workload(namespace="research", kind="Deployment", name="gone")
    standin.fail("PATCH", r"/deployments/chat/scale", code=403)
    with pytest.raises(PermanentStepError, match=r"RBAC: .* may not patch deployments/scale"):
        await kube.scale_workload(namespace="research", kind="Deployment", name="chat", replicas=0)


async def test_the_reclaim_action_scales_down_and_check_sees_it_after_a_crash(
    standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    """workload.reclaim through the real client; check() then reads 0 replicas as done."""
    _serving(standin)
    steps = Reclaim(ReclaimPolicy())
    params = ReclaimParams(
        namespace="research",
        pod="chat-7d9f-abcde",
        kind="Deployment",
        name="chat",
        gpus=8,
        gpu_model="NVIDIA H100 80GB HBM3",
        idle_hours=3.5,
    )
    ctx = _ctx(kube)
    assert (await steps.check(ctx, params)).state == "not_done"
    out = await steps.run(ctx, params)
    assert {k: out[k] for k in ("gpus_released", "workload", "namespace", "previous_replicas")} == {
        "gpus_released": 8,
        "workload": "Deployment/chat",
        "namespace": "research",
        "previous_replicas": 2,
    }
    assert out["restore"] == "kubectl -n research scale deployment/chat --replicas=2"
    deployment = standin.workloads[("research", "deployments", "chat")]
    assert deployment["spec"]["replicas"] == 0
    assert deployment["metadata"]["annotations"][RECLAIMED_FROM_ANNOTATION] == "2"
    assert deployment["metadata"]["annotations"]["gpubot.io/reclaimed-by"].startswith("U1: ")
    done = await steps.check(ctx, params)
    assert done.state == "done"
    assert (done.output["gpus_released"], done.output["previous_replicas"]) == (8, 2)


async def test_a_bare_pod_is_deleted_and_a_job_is_refused(
    standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    standin.add_node("gpu-a")
    standin.add_pod("ml", "notebook", node="gpu-a", gpus=1, metadata={"creationTimestamp": OLD})
    standin.add_pod(
        "ml",
        "sweep-x1",
        node="gpu-a",
        gpus=2,
        owner=("Job", "sweep"),
        metadata={"creationTimestamp": OLD},
    )
    steps, ctx = Reclaim(ReclaimPolicy()), _ctx(kube)
    bare = ReclaimParams(namespace="ml", pod="notebook", kind="Pod", name="notebook", gpus=1)
    out = await steps.run(ctx, bare)
    assert (out["gpus_released"], out["workload"]) == (1, "Pod/notebook")
    assert standin.pods_on("gpu-a") == ["ml/sweep-x1"]
    assert (await steps.check(ctx, bare)).state == "done"
    job = ReclaimParams(namespace="ml", pod="sweep-x1", kind="Job", name="sweep", gpus=2)
    with pytest.raises(PermanentStepError, match="never scales or deletes a Job"):
        await steps.run(ctx, job)
    assert standin.pods_on("gpu-a") == ["ml/sweep-x1"]
    gone = ReclaimParams(namespace="ml", pod="notebook", kind="Pod", name="notebook")
    with pytest.raises(StopRunError, match="gone"):
        await steps.run(ctx, gone)


_PATH = re.compile(
    r"^/apis?/(?:(?P<group>[a-z.]+)/)?v1/(?:namespaces/[^/]+/)?(?P<resource>[a-z]+)"
    r"(?:/(?P<name>[^/?]+)(?:/(?P<sub>[a-z]+))?)?"
)
_VERB = {"GET": "get", "PATCH": "patch", "DELETE": "delete", "POST": "create"}


def _rbac() -> set[tuple[str, str, str]]:
    docs = list(yaml.safe_load_all((ROOT / "deploy" / "rbac" / "clusterrole.yaml").read_text()))
    [role] = [d for d in docs if d["kind"] == "ClusterRole"]
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


async def test_every_call_of_a_reclamation_is_allowed_by_the_clusterrole(
    standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    """The shipped ClusterRole grants each (group, resource, verb) the reclamation uses."""
    _serving(standin)
    standin.add_pod(
        "research", "notebook", node="gpu-a", gpus=1, metadata={"creationTimestamp": OLD}
    )
    steps, ctx = Reclaim(ReclaimPolicy()), _ctx(kube)
    await kube.get_workload_owner(namespace="research", pod="chat-7d9f-abcde")
    await steps.plan(ctx, ReclaimParams(namespace="research", pod="chat-7d9f-abcde"))
    await steps.run(ctx, ReclaimParams(namespace="research", pod="chat-7d9f-abcde"))
    await steps.run(ctx, ReclaimParams(namespace="research", pod="notebook"))
    granted, used = _rbac(), set()
    for method, path in standin.calls:
        m = _PATH.match(path)
        assert m is not None, path
        resource = m["resource"] + (f"/{m['sub']}" if m["sub"] else "")
        verb = "list" if method == "GET" and not m["name"] else _VERB[method]
        used.add((m["group"] or "", resource, verb))
    assert ("apps", "deployments/scale", "patch") in used
    assert ("apps", "replicasets", "get") in used
    assert used <= granted, sorted(used - granted)
