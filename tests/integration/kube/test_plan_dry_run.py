"""plan() asks the API server with dryRun=All: nothing changes, and a refusal (RBAC,
admission) shows up in the plan rather than only when the step runs."""

from __future__ import annotations

import pytest
from kube_standin import KubeStandin

from gpubot.actions.base import ActionContext, ClusterPorts
from gpubot.actions.node import NodeParams, TaintParams, plan_cordon, plan_taint
from gpubot.backends.kube import KubernetesKubeApi
from gpubot.backends.simulated import SimulatedCluster
from gpubot.engine.clock import FakeClock
from gpubot.errors import PermanentStepError


def _ctx(kube: KubernetesKubeApi) -> ActionContext:
    sim = SimulatedCluster()
    return ActionContext(
        cluster=ClusterPorts("lab", kube, sim, sim),
        clock=FakeClock(),
        actor="planner",
        reason="plan",
        dry_run=True,
    )


async def test_plan_dry_runs_the_cordon_and_taint_and_changes_nothing(
    standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    standin.add_node("gpu-a", gpus=8)
    ctx = _ctx(kube)
    note = await plan_cordon(ctx, NodeParams(node="gpu-a"))
    assert note.summary.startswith("cordon gpu-a")
    await plan_taint(ctx, TaintParams(node="gpu-a", key="gpubot.io/xid", value="79"))
    patches = standin.calls_of("PATCH", "/api/v1/nodes/gpu-a")
    assert len(patches) == 2
    assert all("dryRun=All" in p for p in patches)
    node = await kube.get_node(node="gpu-a")
    assert not node.unschedulable
    assert not node.taints


async def test_plan_shows_a_refusal_before_anything_runs(
    standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    standin.add_node("gpu-a", gpus=8)
    standin.fail("PATCH", "/api/v1/nodes/gpu-a", code=403)
    with pytest.raises(PermanentStepError, match="patch"):
        await plan_cordon(_ctx(kube), NodeParams(node="gpu-a"))
