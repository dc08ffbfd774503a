"""Idle-GPU reclamation through the real kubernetes client against a real API server: owner
resolution (Pod → ReplicaSet → Deployment, StatefulSet, bare Pod, Job), the /scale
subresource with the replicas recorded on the workload, dry runs, errors, and the shipped
ClusterRole under RBAC.

No Deployment or ReplicaSet controller runs here: the ReplicaSet and the pods are made by
hand, and scaling to zero is checked on the objects (spec.replicas, the /scale subresource),
not by pods going away.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from kube_cluster import Cluster, kubelet_for, shipped_rules
from waiting import eventually

from gpubot.actions.base import ActionContext
from gpubot.actions.workloads import Reclaim, ReclaimParams
from gpubot.backends.kube import KubernetesKubeApi
from gpubot.backends.simulated import SimulatedCluster
from gpubot.domain.fleet.reclaim import ReclaimPolicy
from gpubot.domain.fleet.workloads import RECLAIMED_FROM_ANNOTATION
from gpubot.engine.clock import FakeClock
from gpubot.errors import NotFoundError, PermanentStepError, StopRunError
from gpubot.ports import ClusterPorts


def _serving(c: Cluster) -> tuple[str, str]:
    """research/chat: a Deployment (2 replicas of 4 GPUs) through its ReplicaSet."""
    gpu, ns = c.add_node("gpu-a"), c.namespace("research")
    deployment = c.add_deployment(ns, "chat", replicas=2)
    rs = c.add_replicaset(
        ns,
        "chat-7d9f",
        replicas=2,
        selector={"app": "chat", "pod-template-hash": "7d9f"},
        owner=("Deployment", "chat", deployment),
    )
    for suffix in ("abcde", "fghij"):
        c.add_pod(
            ns,
            f"chat-7d9f-{suffix}",
            node=gpu,
            gpus=4,
            owner=("ReplicaSet", "chat-7d9f", rs),
            labels={"app": "chat", "pod-template-hash": "7d9f"},
        )
    return gpu, ns


def _ctx(kube: KubernetesKubeApi, *, actor: str = "U1") -> ActionContext:
    """The pods were made just now; the clock says three days later, so they are old enough."""
    sim = SimulatedCluster()
    return ActionContext(
        cluster=ClusterPorts("lab", kube, sim.agent, sim.metrics),
        clock=FakeClock(datetime.now(UTC) + timedelta(days=3)),
        actor=actor,
        reason="gpubot idle-reclaim/reclaim run=run-1",
        run_id="run-1",
    )


async def test_a_deployment_pod_resolves_through_its_replicaset(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    """The owner chain is read from the API, and the GPUs of every replica are counted."""
    _, ns = _serving(cluster)
    w = await kube.workloads.get_workload_owner(namespace=ns, pod="chat-7d9f-abcde")
    assert (w.kind, w.name, w.replicas, w.pods, w.gpus) == ("Deployment", "chat", 2, 2, 8)
    assert cluster.calls_of("GET", f"/apis/apps/v1/namespaces/{ns}/replicasets/chat-7d9f")
    assert cluster.calls_of("GET", "labelSelector=app%3Dchat")


async def test_statefulset_bare_pod_job_and_orphan_replicaset(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    """Each kind resolves to what runs it; a Job is named from the reference, never read."""
    gpu, ml = cluster.add_node("gpu-a"), cluster.namespace("ml")
    sts = cluster.add_statefulset(ml, "llm", replicas=1)
    cluster.add_pod(
        ml, "llm-0", node=gpu, gpus=8, owner=("StatefulSet", "llm", sts), labels={"app": "llm"}
    )
    cluster.add_pod(ml, "notebook", node=gpu, gpus=1)
    cluster.add_pod(ml, "sweep-x1", node=gpu, gpus=2, owner=("Job", "sweep"))
    loose = cluster.add_replicaset(ml, "loose", replicas=1, selector={"app": "loose"})
    cluster.add_pod(
        ml,
        "loose-q",
        node=gpu,
        gpus=1,
        owner=("ReplicaSet", "loose", loose),
        labels={"app": "loose"},
    )
    llm = await kube.workloads.get_workload_owner(namespace=ml, pod="llm-0")
    assert (llm.ref, llm.replicas, llm.gpus) == ("StatefulSet/llm", 1, 8)
    bare = await kube.workloads.get_workload_owner(namespace=ml, pod="notebook")
    assert (bare.ref, bare.bare_pod, bare.gpus) == ("Pod/notebook", True, 1)
    job = await kube.workloads.get_workload_owner(namespace=ml, pod="sweep-x1")
    assert (job.ref, job.scalable, job.bare_pod) == ("Job/sweep", False, False)
    assert not [c for c in cluster.calls if "/jobs" in c.path]
    orphan = await kube.workloads.get_workload_owner(namespace=ml, pod="loose-q")
    assert (orphan.ref, orphan.scalable) == ("ReplicaSet/loose", False)


async def test_scale_records_the_replicas_then_scales_through_the_subresource(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    """The annotation lands before /scale, so a crash in between leaves the way back."""
    _, ns = _serving(cluster)
    was = await kube.workloads.scale_workload(
        namespace=ns,
        kind="Deployment",
        name="chat",
        replicas=0,
        annotations={RECLAIMED_FROM_ANNOTATION: "2"},
    )
    assert was == 2
    writes = [(c.path, c.status) for c in cluster.calls if c.method == "PATCH"]
    assert writes == [
        (f"/apis/apps/v1/namespaces/{ns}/deployments/chat", 200),
        (f"/apis/apps/v1/namespaces/{ns}/deployments/chat/scale", 200),
    ]
    w = await kube.workloads.get_workload(namespace=ns, kind="Deployment", name="chat")
    assert (w.replicas, w.recorded_replicas) == (0, 2)
    assert cluster.apps.read_namespaced_deployment("chat", ns).spec.replicas == 0


async def test_a_dry_run_sends_dry_run_all_and_changes_nothing(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    _, ns = _serving(cluster)
    before = cluster.apps.read_namespaced_deployment("chat", ns).metadata.resource_version
    was = await kube.workloads.scale_workload(
        namespace=ns,
        kind="Deployment",
        name="chat",
        replicas=0,
        annotations={RECLAIMED_FROM_ANNOTATION: "2"},
        dry_run=True,
    )
    assert was == 2
    patches = [c for c in cluster.calls if c.method == "PATCH"]
    assert len(patches) == 2
    assert all("dryRun=All" in c.path and c.status == 200 for c in patches)
    w = await kube.workloads.get_workload(namespace=ns, kind="Deployment", name="chat")
    assert (w.replicas, w.recorded_replicas) == (2, None)
    after = cluster.apps.read_namespaced_deployment("chat", ns).metadata.resource_version
    assert after == before


async def test_a_missing_workload_is_not_found(cluster: Cluster, kube: KubernetesKubeApi) -> None:
    _, ns = _serving(cluster)
    with pytest.raises(NotFoundError, match="gone"):
        await kube.workloads.get_workload(namespace=ns, kind="Deployment", name="gone")


async def test_a_forbidden_scale_is_a_one_line_rbac_error(rbac_cluster: Cluster) -> None:
    """May read the Deployment's scale, may not patch it: the real server's 403."""
    c = rbac_cluster
    _, ns = _serving(c)
    token = c.service_account(
        ns,
        "reader",
        rules=[
            {
                "apiGroups": ["apps"],
                "resources": ["deployments", "deployments/scale"],
                "verbs": ["get"],
            }
        ],
    )
    kube = KubernetesKubeApi(c.client(token))
    try:
        with pytest.raises(PermanentStepError, match=r"RBAC: .* may not patch deployments/scale"):
            await kube.workloads.scale_workload(
                namespace=ns, kind="Deployment", name="chat", replicas=0
            )
    finally:
        kube.close()
    assert c.apps.read_namespaced_deployment("chat", ns).spec.replicas == 2


async def test_the_reclaim_action_scales_down_and_check_sees_it_after_a_crash(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    """workload.reclaim through the real client; check() then reads 0 replicas as done."""
    _, ns = _serving(cluster)
    steps = Reclaim(ReclaimPolicy())
    params = ReclaimParams(
        namespace=ns,
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
        "namespace": ns,
        "previous_replicas": 2,
    }
    assert out["restore"] == f"kubectl -n {ns} scale deployment/chat --replicas=2"
    deployment = cluster.apps.read_namespaced_deployment("chat", ns)
    assert deployment.spec.replicas == 0
    assert deployment.metadata.annotations[RECLAIMED_FROM_ANNOTATION] == "2"
    assert deployment.metadata.annotations["gpubot.io/reclaimed-by"].startswith("U1: ")
    done = await steps.check(ctx, params)
    assert done.state == "done"
    assert (done.output["gpus_released"], done.output["previous_replicas"]) == (8, 2)


async def test_a_bare_pod_is_deleted_and_a_job_is_refused(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    gpu, ml = cluster.add_node("gpu-a"), cluster.namespace("ml")
    cluster.add_pod(ml, "notebook", node=gpu, gpus=1)
    cluster.add_pod(ml, "sweep-x1", node=gpu, gpus=2, owner=("Job", "sweep"))
    steps, ctx = Reclaim(ReclaimPolicy()), _ctx(kube)
    bare = ReclaimParams(namespace=ml, pod="notebook", kind="Pod", name="notebook", gpus=1)
    with kubelet_for(cluster, gpu):
        out = await steps.run(ctx, bare)
        assert (out["gpus_released"], out["workload"]) == (1, "Pod/notebook")
        await eventually(
            lambda: cluster.pods_on(gpu, terminating=True) == [f"{ml}/sweep-x1"],
            "the deleted pod to finish terminating",
        )
    assert (await steps.check(ctx, bare)).state == "done"
    job = ReclaimParams(namespace=ml, pod="sweep-x1", kind="Job", name="sweep", gpus=2)
    with pytest.raises(PermanentStepError, match="never scales or deletes a Job"):
        await steps.run(ctx, job)
    assert cluster.pods_on(gpu) == [f"{ml}/sweep-x1"]
    gone = ReclaimParams(namespace=ml, pod="notebook", kind="Pod", name="notebook")
    with pytest.raises(StopRunError, match="gone"):
        await steps.run(ctx, gone)


async def test_the_shipped_clusterrole_allows_every_call_of_a_reclamation(
    rbac_cluster: Cluster,
) -> None:
    """As the bot's ServiceAccount bound to deploy/rbac/clusterrole.yaml, under RBAC: plan,
    scale a Deployment to zero and delete a bare pod, without a single 403."""
    c = rbac_cluster
    gpu, ns = _serving(c)
    c.add_pod(ns, "notebook", node=gpu, gpus=1)
    cluster_rules, _ = shipped_rules()
    token = c.service_account(c.namespace("gpubot"), "gpubot", cluster_rules=cluster_rules)
    kube = KubernetesKubeApi(c.client(token))
    try:
        steps, ctx = Reclaim(ReclaimPolicy()), _ctx(kube)
        await kube.workloads.get_workload_owner(namespace=ns, pod="chat-7d9f-abcde")
        await steps.plan(ctx, ReclaimParams(namespace=ns, pod="chat-7d9f-abcde"))
        await steps.run(ctx, ReclaimParams(namespace=ns, pod="chat-7d9f-abcde"))
        await steps.run(ctx, ReclaimParams(namespace=ns, pod="notebook"))
    finally:
        kube.close()
    assert [c for c in c.calls if c.status in (401, 403)] == []
    assert c.calls_of("PATCH", f"/namespaces/{ns}/deployments/chat/scale")
    assert c.calls_of("DELETE", f"/namespaces/{ns}/pods/notebook")
    assert c.apps.read_namespaced_deployment("chat", ns).spec.replicas == 0
