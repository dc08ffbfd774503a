"""KubernetesKubeApi through the real client against the stand-in: reads, writes, errors."""

from __future__ import annotations

import pytest
from kube_standin import KubeStandin, client_for

from gpubot.backends.kube import KubernetesKubeApi
from gpubot.domain.cluster import CORDON_BY_ANNOTATION, CORDON_REASON_ANNOTATION, Taint
from gpubot.errors import (
    DisruptionBlockedError,
    NotFoundError,
    PermanentStepError,
    TemporaryStepError,
)


def _fleet(s: KubeStandin) -> None:
    s.add_node("gpu-a", gpus=8)
    s.add_node(
        "gpu-mig",
        gpus=0,
        status={
            "capacity": {"nvidia.com/mig-1g.10gb": "7"},
            "allocatable": {"nvidia.com/mig-1g.10gb": "6"},
        },
    )
    s.add_node("cpu-1", gpus=0)
    s.add_pod(
        "ml",
        "train-7d9f-abcde",
        node="gpu-a",
        gpus=4,
        owner=("ReplicaSet", "train-7d9f"),
        labels={"app": "train", "pod-template-hash": "7d9f"},
    )
    s.add_pod("kube-system", "dcgm-x1", node="gpu-a", owner=("DaemonSet", "dcgm"))
    s.add_pod("ml", "other", node="cpu-1")


async def test_nodes_report_gpus_mig_product_and_readiness(
    standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    _fleet(standin)
    nodes = {n.name: n for n in await kube.list_nodes()}
    assert nodes["gpu-a"].gpu_capacity == 8
    assert nodes["gpu-a"].gpu_product == "NVIDIA-H100-80GB-HBM3"
    assert nodes["gpu-a"].ready
    assert (nodes["gpu-mig"].gpu_capacity, nodes["gpu-mig"].gpu_allocatable) == (7, 6)
    assert not nodes["cpu-1"].is_gpu_node


async def test_cordon_annotates_and_uncordon_clears(
    standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    _fleet(standin)
    await kube.set_unschedulable(node="gpu-a", value=True, actor="U1", reason="xid79 run=1")
    node = await kube.get_node(node="gpu-a")
    assert node.unschedulable
    assert node.annotations[CORDON_BY_ANNOTATION] == "U1"
    assert node.annotations[CORDON_REASON_ANNOTATION] == "xid79 run=1"
    assert len(standin.calls_of("PATCH", "/api/v1/nodes/gpu-a")) == 1
    await kube.set_unschedulable(node="gpu-a", value=False, actor="U1", reason="ok")
    node = await kube.get_node(node="gpu-a")
    assert not node.unschedulable
    assert CORDON_BY_ANNOTATION not in node.annotations


async def test_taints_are_added_replaced_and_removed_keeping_others(
    standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    standin.add_node("gpu-a", spec={"taints": [{"key": "other", "effect": "NoSchedule"}]})
    xid = Taint(key="gpubot.io/xid", value="79")
    await kube.set_taint(node="gpu-a", taint=xid, present=True)
    await kube.set_taint(node="gpu-a", taint=xid, present=True)
    node = await kube.get_node(node="gpu-a")
    assert node.taints == (Taint("other"), xid)
    await kube.set_taint(node="gpu-a", taint=xid, present=False)
    assert (await kube.get_node(node="gpu-a")).taints == (Taint("other"),)


async def test_pods_on_a_node_with_gpus_and_resolved_owners(
    standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    _fleet(standin)
    pods = {p.name: p for p in await kube.list_pods(node="gpu-a")}
    assert set(pods) == {"train-7d9f-abcde", "dcgm-x1"}
    train = pods["train-7d9f-abcde"]
    assert (train.gpu_request, train.owner_kind, train.owner_name) == (4, "Deployment", "train")
    assert pods["dcgm-x1"].is_daemonset
    assert any("fieldSelector=spec.nodeName%3Dgpu-a" in c for _, c in standin.calls)


async def test_pod_reads_for_triage(standin: KubeStandin, kube: KubernetesKubeApi) -> None:
    standin.add_node("gpu-a")
    standin.add_pod(
        "ml",
        "job-0",
        node="gpu-a",
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
                    "lastState": {
                        "terminated": {
                            "reason": "OOMKilled",
                            "exitCode": 137,
                            "finishedAt": "2026-11-22T09:00:00Z",
                        }
                    },
                }
            ]
        },
        _logs={"previous": ["a", "b", "CUDA out of memory"], "current": ["running"]},
    )
    standin.events.append(
        {
            "metadata": {"name": "e1", "namespace": "ml"},
            "involvedObject": {"kind": "Pod", "name": "job-0", "namespace": "ml"},
            "reason": "BackOff",
            "message": "Back-off restarting failed container",
            "type": "Warning",
            "count": 3,
        }
    )
    pod = await kube.get_pod(namespace="ml", name="job-0")
    assert pod.restart_count == 3
    assert pod.last_terminated is not None
    assert (pod.last_terminated.reason, pod.last_terminated.exit_code) == ("OOMKilled", 137)
    assert pod.memory_limit_bytes == 64 << 30
    assert pod.shm_size_bytes == 8 << 30
    logs = await kube.pod_logs(namespace="ml", name="job-0", previous=True, tail_lines=2)
    assert logs.splitlines() == ["b", "CUDA out of memory"]
    [event] = await kube.pod_events(namespace="ml", name="job-0")
    assert (event.reason, event.count) == ("BackOff", 3)


async def test_eviction_201_429_names_the_pdb_and_404_is_success(
    standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    standin.add_node("gpu-a")
    standin.add_pod("ml", "a", node="gpu-a", labels={"app": "ps"})
    standin.add_pod("ml", "b", node="gpu-a")
    standin.add_pdb("ml", "ps-pdb", selector={"app": "ps"}, min_available=1)
    with pytest.raises(DisruptionBlockedError) as blocked:
        await kube.evict(namespace="ml", name="a")
    assert blocked.value.budget == "ps-pdb"
    await kube.evict(namespace="ml", name="b", grace_seconds=30)
    assert standin.pods_on("gpu-a") == ["ml/a"]
    await kube.evict(namespace="ml", name="b")  # already gone
    [pdb] = await kube.list_pdbs()
    assert (pdb.name, pdb.disruptions_allowed, dict(pdb.selector)) == ("ps-pdb", 0, {"app": "ps"})


async def test_status_codes_map_to_error_kinds(
    standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    standin.add_node("gpu-a")
    with pytest.raises(NotFoundError):
        await kube.get_node(node="nope")
    standin.fail("GET", "/api/v1/nodes/gpu-a", code=500)
    with pytest.raises(TemporaryStepError):
        await kube.get_node(node="gpu-a")
    standin.fail("PATCH", "/api/v1/nodes/gpu-a", code=403)
    with pytest.raises(PermanentStepError, match="may not patch nodes/gpu-a"):
        await kube.set_unschedulable(node="gpu-a", value=True, actor="x", reason="y")
    assert (await kube.get_node(node="gpu-a")).unschedulable is False


async def test_dry_run_sends_dry_run_all_and_changes_nothing(standin: KubeStandin) -> None:
    standin.add_node("gpu-a")
    api = KubernetesKubeApi(client_for(standin), dry_run=True)
    try:
        await api.set_unschedulable(node="gpu-a", value=True, actor="x", reason="y")
        assert not (await api.get_node(node="gpu-a")).unschedulable
        assert "dryRun=All" in standin.calls_of("PATCH", "/nodes/gpu-a")[0]
    finally:
        api.close()


async def test_node_events_and_metadata_and_scale(
    standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    standin.add_node("gpu-a")
    await kube.post_node_event(node="gpu-a", reason="GpubotCordon", message="cordoned by U1")
    [event] = standin.events
    assert event["involvedObject"] == {"kind": "Node", "name": "gpu-a", "uid": "gpu-a"}
    assert event["metadata"]["namespace"] == "default"
    await kube.set_node_metadata(
        node="gpu-a", labels={"gpubot.io/hardware-service": "rma"}, annotations={"a": "b"}
    )
    node = await kube.get_node(node="gpu-a")
    assert node.labels["gpubot.io/hardware-service"] == "rma"
    standin.scales[("ml", "deployments", "web")] = 3
    assert await kube.scale(namespace="ml", kind="Deployment", name="web", replicas=0) == 3
    assert standin.scales[("ml", "deployments", "web")] == 0
