"""plan() asks the real API server with dryRun=All: admission and validation run, nothing
changes, and a refusal (RBAC) shows up in the plan rather than only when the step runs."""

from __future__ import annotations

import pytest
from kube_cluster import Cluster

from gpubot.actions.base import ActionContext
from gpubot.actions.node import NodeParams, TaintParams, plan_cordon, plan_taint
from gpubot.backends.kube import KubernetesKubeApi
from gpubot.backends.simulated import SimulatedCluster
from gpubot.engine.clock import FakeClock
from gpubot.errors import PermanentStepError
from gpubot.ports import ClusterPorts


def _ctx(kube: KubernetesKubeApi) -> ActionContext:
    sim = SimulatedCluster()
    return ActionContext(
        cluster=ClusterPorts("lab", kube, sim.agent, sim.metrics),
        clock=FakeClock(),
        actor="planner",
        reason="plan",
        dry_run=True,
    )


async def test_plan_dry_runs_the_cordon_and_taint_and_changes_nothing(
    cluster: Cluster, kube: KubernetesKubeApi
) -> None:
    gpu = cluster.add_node("gpu-a", gpus=8)
    before = cluster.node(gpu)["metadata"]["resourceVersion"]
    ctx = _ctx(kube)
    note = await plan_cordon(ctx, NodeParams(node=gpu))
    assert note.summary.startswith(f"cordon {gpu}")
    await plan_taint(ctx, TaintParams(node=gpu, key="gpubot.io/xid", value="79"))
    patches = [c for c in cluster.calls if c.method == "PATCH"]
    assert [c.status for c in patches] == [200, 200]
    assert all("dryRun=All" in c.path for c in patches)
    node = await kube.get_node(node=gpu)
    assert not node.unschedulable
    assert not node.taints
    assert cluster.node(gpu)["metadata"]["resourceVersion"] == before


async def test_plan_shows_a_refusal_before_anything_runs(rbac_cluster: Cluster) -> None:
    """May read nodes and pods, may not patch nodes: the dry run gets the real 403."""
    c = rbac_cluster
    gpu, ns = c.add_node("gpu-a", gpus=8), c.namespace("bot")
    token = c.service_account(
        ns,
        "reader",
        cluster_rules=[
            {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list"]}
        ],
    )
    kube = KubernetesKubeApi(c.client(token))
    try:
        with pytest.raises(PermanentStepError, match=f"may not patch nodes/{gpu}"):
            await plan_cordon(_ctx(kube), NodeParams(node=gpu))
    finally:
        kube.close()
    assert [(call.method, call.status) for call in c.calls if call.method == "PATCH"] == [
        ("PATCH", 403)
    ]
