"""A Pod read as JSON (what list_pods reads now) gives the same PodInfo as the client's
V1Pod model of the same Pod, field for field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from gpubot.backends.kube import convert


def as_model(body: dict[str, Any]) -> Any:
    """The V1Pod the official client builds from this JSON."""
    return client.ApiClient().deserialize(  # type: ignore[no-untyped-call]
        json.dumps(body), "V1Pod", "application/json"
    )


RICH: dict[str, Any] = {
    "metadata": {
        "name": "trainer-7d9f-abcde",
        "namespace": "ml-train",
        "uid": "5d1c7e2a-0000-4000-8000-000000000001",
        "labels": {"app": "trainer", "pod-template-hash": "7d9f"},
        "annotations": {"team": "llm"},
        "creationTimestamp": "2026-11-22T01:39:20Z",
        "deletionTimestamp": "2026-11-22T02:00:00Z",
        "deletionGracePeriodSeconds": 30,
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "trainer-7d9f",
                "uid": "u1",
                "controller": True,
            }
        ],
    },
    "spec": {
        "nodeName": "gpu-node-07",
        "containers": [
            {"name": "sidecar", "image": "log:1"},
            {
                "name": "main",
                "image": "trainer:1",
                "resources": {"limits": {"nvidia.com/gpu": "4", "memory": "64Gi"}},
                "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
            },
        ],
        "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}],
    },
    "status": {
        "phase": "Running",
        "containerStatuses": [
            {
                "name": "main",
                "ready": True,
                "restartCount": 3,
                "image": "trainer:1",
                "imageID": "",
                "lastState": {
                    "terminated": {
                        "exitCode": 137,
                        "signal": 9,
                        "reason": "OOMKilled",
                        "message": "killed",
                        "finishedAt": "2026-11-22T01:50:00Z",
                    }
                },
            }
        ],
    },
}
BARE: dict[str, Any] = {
    "metadata": {"name": "job-x", "namespace": "default"},
    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
}
UNBOUNDED_SHM: dict[str, Any] = {
    "metadata": {
        "name": "job-y",
        "namespace": "default",
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "y", "uid": "u"}],
    },
    "spec": {
        "containers": [
            {
                "name": "c",
                "image": "busybox",
                "resources": {"requests": {"nvidia.com/mig-1g.10gb": "1"}},
                "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
            }
        ],
        "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
    },
    "status": {"phase": "Pending"},
}


@pytest.mark.parametrize("body", [RICH, BARE, UNBOUNDED_SHM], ids=["rich", "bare", "shm"])
def test_pod_json_reads_as_the_model_does(body: dict[str, Any]) -> None:
    assert convert.pod_info_json(body) == convert.pod_info(as_model(body))


def test_the_rich_pod_reads_as_expected() -> None:
    """The fields the comparison above must not get right by both being wrong."""
    pod = convert.pod_info_json(RICH)
    assert (pod.owner_kind, pod.owner_name) == ("Deployment", "trainer")
    assert (pod.container, pod.gpu_request, pod.restart_count) == ("main", 4, 3)
    assert pod.shm_size_bytes == 8 * 2**30
    assert pod.last_terminated is not None
    assert (pod.last_terminated.exit_code, pod.last_terminated.signal) == (137, 9)
    assert pod.deletion_grace_seconds == 30
