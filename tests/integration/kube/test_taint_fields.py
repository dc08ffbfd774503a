"""Adding and removing gpubot's taint gives the node's other taints back byte for byte, on a
real API server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kube_cluster import Cluster

from gpubot.backends.kube import KubernetesKubeApi
from gpubot.domain.fleet.cluster import Taint
from gpubot.errors import GpubotError

# What the node lifecycle controller writes: timeAdded drives tolerationSeconds. Keys in the
# order the API server writes them, so the JSON can be compared as text.
UNREACHABLE = {
    "key": "node.kubernetes.io/unreachable",
    "effect": "NoExecute",
    "timeAdded": "2026-11-25T10:00:00Z",
}
OTHER = {"key": "team", "value": "ml", "effect": "PreferNoSchedule"}


async def test_other_taints_keep_time_added_through_add_and_remove(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    gpu = cluster.add_node("gpu-a", taints=[dict(UNREACHABLE), dict(OTHER)])
    xid = Taint(key="gpubot.io/xid", value="79")
    await kube.set_taint(node=gpu, taint=xid, present=True)
    taints = cluster.node(gpu)["spec"]["taints"]
    assert taints == [
        UNREACHABLE,
        OTHER,
        {"key": "gpubot.io/xid", "value": "79", "effect": "NoSchedule"},
    ]
    await kube.set_taint(node=gpu, taint=xid, present=False)
    after = cluster.node(gpu)["spec"]["taints"]
    assert json.dumps(after) == json.dumps([UNREACHABLE, OTHER])


async def test_the_patch_sends_camel_case_and_the_version_read(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    gpu = cluster.add_node("gpu-a", taints=[dict(UNREACHABLE)])
    version = cluster.node(gpu)["metadata"]["resourceVersion"]
    sent: list[Any] = []
    request = kube.http.request

    async def recording(method: str, path: str, **kw: Any) -> bytes:
        if method == "PATCH":
            sent.append(kw["body"])
        return await request(method, path, **kw)

    kube.http.request = recording  # type: ignore[method-assign]
    await kube.set_taint(node=gpu, taint=Taint(key="gpubot.io/xid"), present=True)
    (body,) = sent
    assert body["metadata"] == {"resourceVersion": version}
    assert "time_added" not in json.dumps(body)
    assert body["spec"]["taints"] == [
        UNREACHABLE,
        {"key": "gpubot.io/xid", "effect": "NoSchedule"},
    ]


async def test_a_taint_written_meanwhile_is_a_conflict_not_a_lost_update(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    """The version read guards the write: someone's taint added between read and patch
    makes the patch fail (the server's 409, retried by the executor) instead of being
    overwritten."""
    gpu = cluster.add_node("gpu-a", taints=[dict(UNREACHABLE)])
    read = kube._read_node_json

    async def read_then_someone_writes(node: str) -> dict[str, Any]:
        current = await read(node)
        cluster.core.patch_node(
            node,
            {"spec": {"taints": [dict(UNREACHABLE), dict(OTHER)]}},
            _content_type="application/merge-patch+json",
        )
        return current

    kube._read_node_json = read_then_someone_writes  # type: ignore[method-assign]
    with pytest.raises(GpubotError, match="modified"):
        await kube.set_taint(node=gpu, taint=Taint(key="gpubot.io/xid"), present=True)
    assert cluster.node(gpu)["spec"]["taints"] == [UNREACHABLE, OTHER]
