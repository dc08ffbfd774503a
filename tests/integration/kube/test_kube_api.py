"""KubernetesKubeApi through the real client against a real API server: reads, writes, errors.

Two things the real server cannot do here stay on the stand-in (tests at the end): answer
with a 500, and serve a container log (there is no kubelet to ask).
"""

from __future__ import annotations

import pytest
from kube_cluster import Cluster
from kube_standin import KubeStandin, client_for

from gpubot.backends.kube import KubernetesKubeApi
from gpubot.domain.fleet.cluster import CORDON_BY_ANNOTATION, CORDON_REASON_ANNOTATION, Taint
from gpubot.errors import (
    DisruptionBlockedError,
    NotFoundError,
    PermanentStepError,
    TemporaryStepError,
)


def _fleet(c: Cluster) -> tuple[str, str, str, str]:
    gpu = c.add_node("gpu-a", gpus=8)
    mig = c.add_node(
        "gpu-mig",
        gpus=0,
        capacity={"nvidia.com/mig-1g.10gb": "7"},
        allocatable={"nvidia.com/mig-1g.10gb": "6"},
    )
    cpu = c.add_node("cpu-1", gpus=0)
    ml, system = c.namespace("ml"), c.namespace("system")
    c.add_pod(
        ml,
        "train-7d9f-abcde",
        node=gpu,
        gpus=4,
        owner=("ReplicaSet", "train-7d9f"),
        labels={"app": "train", "pod-template-hash": "7d9f"},
    )
    c.add_pod(system, "dcgm-x1", node=gpu, owner=("DaemonSet", "dcgm"))
    c.add_pod(ml, "other", node=cpu)
    return gpu, mig, cpu, ml


async def test_nodes_report_gpus_mig_product_and_readiness(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    gpu, mig, cpu, _ = _fleet(cluster)
    nodes = {n.name: n for n in await kube.list_nodes()}
    assert nodes[gpu].gpu_capacity == 8
    assert nodes[gpu].gpu_product == "NVIDIA-H100-80GB-HBM3"
    assert nodes[gpu].ready
    assert nodes[gpu].taints == ()
    assert (nodes[mig].gpu_capacity, nodes[mig].gpu_allocatable) == (7, 6)
    assert not nodes[cpu].is_gpu_node


async def test_cordon_annotates_and_uncordon_clears(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    gpu = cluster.add_node("gpu-a")
    await kube.set_unschedulable(node=gpu, value=True, actor="U1", reason="xid79 run=1")
    node = await kube.get_node(node=gpu)
    assert node.unschedulable
    assert node.annotations[CORDON_BY_ANNOTATION] == "U1"
    assert node.annotations[CORDON_REASON_ANNOTATION] == "xid79 run=1"
    assert len(cluster.calls_of("PATCH", f"/api/v1/nodes/{gpu}")) == 1
    await kube.set_unschedulable(node=gpu, value=False, actor="U1", reason="ok")
    node = await kube.get_node(node=gpu)
    assert not node.unschedulable
    assert CORDON_BY_ANNOTATION not in node.annotations


async def test_taints_are_added_replaced_and_removed_keeping_others(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    gpu = cluster.add_node("gpu-a", taints=[{"key": "other", "effect": "NoSchedule"}])
    xid = Taint(key="gpubot.io/xid", value="79")
    await kube.set_taint(node=gpu, taint=xid, present=True)
    await kube.set_taint(node=gpu, taint=xid, present=True)
    node = await kube.get_node(node=gpu)
    assert node.taints == (Taint("other"), xid)
    await kube.set_taint(node=gpu, taint=xid, present=False)
    assert (await kube.get_node(node=gpu)).taints == (Taint("other"),)


async def test_pods_on_a_node_with_gpus_and_resolved_owners(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    gpu, _, _, _ = _fleet(cluster)
    pods = {p.name: p for p in await kube.list_pods(node=gpu)}
    assert set(pods) == {"train-7d9f-abcde", "dcgm-x1"}
    train = pods["train-7d9f-abcde"]
    assert (train.gpu_request, train.owner_kind, train.owner_name) == (4, "Deployment", "train")
    assert train.phase == "Running"
    assert pods["dcgm-x1"].is_daemonset
    assert cluster.calls_of("GET", f"fieldSelector=spec.nodeName%3D{gpu}")


async def test_a_plans_pod_list_may_come_from_the_api_servers_cache(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    """resourceVersion=0: the API server answers from its watch cache (its index by node),
    without reading etcd; the pods are the same."""
    gpu, _, _, _ = _fleet(cluster)
    fresh = {p.name for p in await kube.list_pods(node=gpu)}
    assert not cluster.calls_of("GET", "resourceVersion=0")
    cached = {p.name for p in await kube.list_pods(node=gpu, cached=True)}
    assert cached == fresh == {"train-7d9f-abcde", "dcgm-x1"}
    assert cluster.calls_of("GET", "resourceVersion=0")


async def test_pod_reads_for_triage(cluster: Cluster, kube: KubernetesKubeApi) -> None:
    gpu, ml = cluster.add_node("gpu-a"), cluster.namespace("ml")
    cluster.add_pod(
        ml,
        "job-0",
        node=gpu,
        gpus=1,
        owner=("Job", "job"),
        spec={
            "containers": [
                {
                    "name": "main",
                    "image": "x",
                    "resources": {"limits": {"nvidia.com/gpu": "1", "memory": "64Gi"}},
                    "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
                }
            ],
            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}],
        },
        status={
            "containerStatuses": [
                {
                    "name": "main",
                    "image": "x",
                    "imageID": "sha256:1",
                    "ready": True,
                    "restartCount": 3,
                    "state": {"running": {"startedAt": "2026-11-22T09:00:01Z"}},
                    "lastState": {
                        "terminated": {
                            "reason": "OOMKilled",
                            "exitCode": 137,
                            "startedAt": "2026-11-22T08:00:00Z",
                            "finishedAt": "2026-11-22T09:00:00Z",
                        }
                    },
                }
            ]
        },
    )
    cluster.core.create_namespaced_event(
        ml,
        {
            "metadata": {"name": "job-0.backoff"},
            "involvedObject": {"kind": "Pod", "name": "job-0", "namespace": ml},
            "reason": "BackOff",
            "message": "Back-off restarting failed container",
            "type": "Warning",
            "count": 3,
            "firstTimestamp": "2026-11-22T09:00:00Z",
            "lastTimestamp": "2026-11-22T09:00:30Z",
        },
    )
    pod = await kube.get_pod(namespace=ml, name="job-0")
    assert pod.restart_count == 3
    assert pod.last_terminated is not None
    assert (pod.last_terminated.reason, pod.last_terminated.exit_code) == ("OOMKilled", 137)
    assert pod.memory_limit_bytes == 64 << 30
    assert pod.shm_size_bytes == 8 << 30
    [event] = await kube.pod_events(namespace=ml, name="job-0")
    assert (event.reason, event.count) == ("BackOff", 3)


async def test_eviction_201_429_names_the_pdb_and_404_is_success(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    gpu, ml = cluster.add_node("gpu-a"), cluster.namespace("ml")
    cluster.add_pod(ml, "a", node=gpu, labels={"app": "ps"})
    cluster.add_pod(ml, "b", node=gpu)
    cluster.add_pdb(ml, "ps-pdb", selector={"app": "ps"}, min_available=1)
    assert cluster.wait_pdb(ml, "ps-pdb", healthy=1) == {"allowed": 0, "healthy": 1}
    with pytest.raises(DisruptionBlockedError) as blocked:
        await kube.evict(namespace=ml, name="a")
    assert blocked.value.budget == "ps-pdb"
    await kube.evict(namespace=ml, name="b", grace_seconds=30)
    # No kubelet: the evicted pod is terminating, and stays so until it is deleted at once.
    assert cluster.pods_on(gpu) == [f"{ml}/a"]
    assert cluster.pods_on(gpu, terminating=True) == [f"{ml}/a", f"{ml}/b"]
    cluster.core.delete_namespaced_pod("b", ml, grace_period_seconds=0)
    await kube.evict(namespace=ml, name="b")  # already gone: 404, which is success
    assert [c.status for c in cluster.calls if c.path.endswith("/pods/b/eviction")] == [201, 404]
    [pdb] = await kube.list_pdbs(namespace=ml)
    assert (pdb.name, pdb.disruptions_allowed, dict(pdb.selector)) == ("ps-pdb", 0, {"app": "ps"})


async def test_not_found_is_its_own_kind(cluster: Cluster, kube: KubernetesKubeApi) -> None:
    with pytest.raises(NotFoundError):
        await kube.get_node(node=cluster.name("nope"))
    with pytest.raises(NotFoundError):
        await kube.get_pod(namespace=cluster.namespace("ml"), name="nope")


async def test_a_403_names_the_verb_and_resource_to_grant(rbac_cluster: Cluster) -> None:
    """Under RBAC, an identity with no grants gets the real server's 403."""
    c = rbac_cluster
    gpu, ns = c.add_node("gpu-a"), c.namespace("bot")
    token = c.service_account(ns, "nobody")
    kube = KubernetesKubeApi(c.client(token))
    try:
        with pytest.raises(PermanentStepError, match=f"may not patch nodes/{gpu}"):
            await kube.set_unschedulable(node=gpu, value=True, actor="x", reason="y")
        with pytest.raises(PermanentStepError, match="may not list nodes"):
            await kube.list_nodes()
    finally:
        kube.close()
    assert not c.node(gpu)["spec"].get("unschedulable")


async def test_dry_run_sends_dry_run_all_and_changes_nothing(cluster: Cluster) -> None:
    gpu = cluster.add_node("gpu-a")
    api = KubernetesKubeApi(cluster.client(), dry_run=True)
    try:
        await api.set_unschedulable(node=gpu, value=True, actor="x", reason="y")
        await api.set_taint(node=gpu, taint=Taint("gpubot.io/xid", "79"), present=True)
        node = await api.get_node(node=gpu)
        assert (node.unschedulable, node.taints) == (False, ())
        patches = cluster.calls_of("PATCH", f"/nodes/{gpu}")
        assert len(patches) == 2
        assert all("dryRun=All" in p for p in patches)
    finally:
        api.close()


async def test_node_events_and_metadata_and_scale(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    gpu, ml = cluster.add_node("gpu-a"), cluster.namespace("ml")
    await kube.post_node_event(node=gpu, reason="GpubotCordon", message="cordoned by U1")
    assert await kube.flush_events(timeout_s=30) == 0  # posted off the caller's path
    [event] = cluster.core.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={gpu}"
    ).items
    assert (event.involved_object.kind, event.involved_object.name) == ("Node", gpu)
    assert (event.reason, event.source.component) == ("GpubotCordon", "gpubot")
    await kube.set_node_metadata(
        node=gpu, labels={"gpubot.io/hardware-service": "rma"}, annotations={"a": "b"}
    )
    node = await kube.get_node(node=gpu)
    assert node.labels["gpubot.io/hardware-service"] == "rma"
    assert node.annotations["a"] == "b"
    cluster.add_deployment(ml, "web", replicas=3)
    assert await kube.scale(namespace=ml, kind="Deployment", name="web", replicas=0) == 3
    assert cluster.apps.read_namespaced_deployment("web", ml).spec.replicas == 0


# -- what only the stand-in can do -----------------------------------------------------------


async def test_a_500_is_temporary_and_changes_nothing(
    standin: KubeStandin, standin_kube: KubernetesKubeApi
) -> None:
    standin.add_node("gpu-a")
    standin.fail("GET", "/api/v1/nodes/gpu-a", code=500)
    with pytest.raises(TemporaryStepError, match="500"):
        await standin_kube.get_node(node="gpu-a")
    assert (await standin_kube.get_node(node="gpu-a")).unschedulable is False


async def test_a_hung_api_server_is_a_temporary_error_after_the_request_timeout(
    standin: KubeStandin,
) -> None:
    standin.add_node("gpu-a")
    standin.latency["get"] = 2.0
    api = KubernetesKubeApi(client_for(standin), request_timeout=0.3)
    try:
        with pytest.raises(TemporaryStepError, match="cannot reach the API server"):
            await api.get_node(node="gpu-a")
    finally:
        api.close()


async def test_container_logs_for_triage(
    standin: KubeStandin, standin_kube: KubernetesKubeApi
) -> None:
    standin.add_node("gpu-a")
    standin.add_pod(
        "ml", "job-0", node="gpu-a", _logs={"previous": ["a", "b", "CUDA out of memory"]}
    )
    logs = await standin_kube.pod_logs(namespace="ml", name="job-0", previous=True, tail_lines=2)
    assert logs.splitlines() == ["b", "CUDA out of memory"]
