"""The simulated cluster: fleet shape, the three ports, scenarios and persistence."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from gpubot.backends.simulated import (
    H100_MEMORY_MIB,
    H100_NAME,
    UNSCHEDULABLE_TAINT,
    SimulatedCluster,
    default_fleet,
    idle_pods,
    inject_xid,
    oom_kill,
    recover_node,
    thermal_runaway,
)
from gpubot.domain.fleet.cluster import CORDON_BY_ANNOTATION, CORDON_REASON_ANNOTATION, Taint
from gpubot.errors import DisruptionBlockedError, InputError, NotFoundError, PermanentStepError
from gpubot.ports import KubeApi, Metrics, NodeAgent

NODE = "gpu-node-03"


@pytest.fixture
def cluster() -> SimulatedCluster:
    return SimulatedCluster.default()


def test_satisfies_the_ports(cluster: SimulatedCluster) -> None:
    """One SimulatedCluster can be passed wherever KubeApi, NodeAgent or Metrics is expected."""
    ports: tuple[KubeApi, NodeAgent, Metrics] = (cluster, cluster, cluster)
    assert all(port is cluster for port in ports)


async def test_default_fleet_shape(cluster: SimulatedCluster) -> None:
    """16 nodes x 8 H100s, named gpu-node-01..16, labelled as the GPU operator labels them."""
    nodes = await cluster.kube.list_nodes()
    assert [n.name for n in nodes] == [f"gpu-node-{i:02d}" for i in range(1, 17)]
    assert cluster.node_names() == [n.name for n in nodes]
    for node in nodes:
        assert node.gpu_capacity == node.gpu_allocatable == 8
        assert node.gpu_product == H100_NAME
        assert node.labels["nvidia.com/gpu.present"] == "true"
        assert node.labels["kubernetes.io/hostname"] == node.name
        assert not node.unschedulable
        assert node.ready
        gpus = await cluster.agent.gpus(node=node.name)
        assert [g.index for g in gpus] == list(range(8))
        for gpu in gpus:
            assert gpu.name == H100_NAME
            assert gpu.memory_total_mib == H100_MEMORY_MIB
            assert (gpu.power_limit_w, gpu.power_min_w, gpu.power_max_w) == (700, 200, 700)
            assert 35 <= gpu.temperature_c <= 70
            assert gpu.healthy


def test_default_fleet_is_deterministic() -> None:
    """The same seed gives the same fleet, so demos and tests read the same names and numbers."""
    assert default_fleet(seed=3).to_dict() == default_fleet(seed=3).to_dict()
    assert default_fleet(seed=3).to_dict() != default_fleet(seed=4).to_dict()


async def test_default_fleet_workload_mix(cluster: SimulatedCluster) -> None:
    """Training, inference and idle pods exist, and their GPUs' utilisation matches their kind."""
    state = cluster.snapshot()
    by_workload = Counter(p.workload for p in state.pods)
    assert by_workload["training"] >= 4
    assert by_workload["inference"] >= 6
    assert by_workload["idle"] >= 2
    assert {p.namespace for p in state.pods} >= {
        "ml-train",
        "inference",
        "research",
        "gpu-operator",
    }
    owner_kinds = {p.owner_kind for p in state.pods}
    assert owner_kinds >= {"StatefulSet", "Job", "ReplicaSet", "DaemonSet", ""}
    for pod in state.pods:
        utils = [state.nodes[pod.node].gpus[i].utilization_pct for i in pod.gpu_indices]
        if pod.workload == "training":
            assert all(u >= 85 for u in utils)
        elif pod.workload == "inference":
            assert all(30 <= u <= 75 for u in utils)
        elif pod.workload == "idle":
            assert all(u <= 1 for u in utils)
    pdbs = await cluster.kube.list_pdbs(namespace="inference")
    assert pdbs
    assert all(b.disruptions_allowed >= 1 for b in pdbs)


async def test_daemonset_pods_on_every_node(cluster: SimulatedCluster) -> None:
    """Every node runs the dcgm-exporter and device-plugin DaemonSet pods, holding no GPU."""
    for name in cluster.node_names():
        pods = await cluster.kube.list_pods(node=name, namespace="gpu-operator")
        assert sorted(p.owner_name for p in pods) == [
            "nvidia-dcgm-exporter",
            "nvidia-device-plugin-daemonset",
        ]
        assert all(p.is_daemonset and p.gpu_request == 0 for p in pods)


def test_gpu_to_pod_mapping_is_unique(cluster: SimulatedCluster) -> None:
    """No GPU index on a node is held by two pods, and no pod holds more GPUs than exist."""
    state = cluster.snapshot()
    held = Counter((p.node, i) for p in state.pods for i in p.gpu_indices)
    assert held
    assert max(held.values()) == 1
    assert all(0 <= i < 8 for _, i in held)


async def test_cordon_sets_annotations_and_uncordon_clears_them(cluster: SimulatedCluster) -> None:
    """Cordon records who and why on the node; uncordon removes both and the node taint."""
    await cluster.kube.set_unschedulable(node=NODE, value=True, actor="U123", reason="XID 79")
    node = await cluster.kube.get_node(node=NODE)
    assert node.unschedulable
    assert node.annotations[CORDON_BY_ANNOTATION] == "U123"
    assert node.annotations[CORDON_REASON_ANNOTATION] == "XID 79"
    assert UNSCHEDULABLE_TAINT in node.taints

    await cluster.kube.set_unschedulable(node=NODE, value=False, actor="U123", reason="fixed")
    node = await cluster.kube.get_node(node=NODE)
    assert not node.unschedulable
    assert CORDON_BY_ANNOTATION not in node.annotations
    assert CORDON_REASON_ANNOTATION not in node.annotations
    assert node.taints == ()


async def test_taint_add_and_remove_are_idempotent(cluster: SimulatedCluster) -> None:
    """Adding twice keeps one taint, same key+effect replaces the value, removing twice is fine."""
    taint = Taint(key="gpubot.io/xid", value="79", effect="NoSchedule")
    await cluster.kube.set_taint(node=NODE, taint=taint, present=True)
    await cluster.kube.set_taint(node=NODE, taint=taint, present=True)
    assert (await cluster.kube.get_node(node=NODE)).taints == (taint,)

    other = Taint(key="gpubot.io/xid", value="48", effect="NoSchedule")
    await cluster.kube.set_taint(node=NODE, taint=other, present=True)
    assert (await cluster.kube.get_node(node=NODE)).taints == (other,)

    for _ in range(2):
        await cluster.kube.set_taint(node=NODE, taint=taint, present=False)
    assert (await cluster.kube.get_node(node=NODE)).taints == ()


async def test_inject_xid_79_loses_the_gpu(cluster: SimulatedCluster) -> None:
    """XID 79 shows as a lost GPU in gpus() and as the XID code in DCGM_FI_DEV_XID_ERRORS."""
    inject_xid(cluster, node=NODE, gpu=2)
    gpu = (await cluster.agent.gpus(node=NODE))[2]
    assert gpu.lost
    assert gpu.xid_errors == (79,)
    assert not gpu.healthy
    assert gpu.utilization_pct == 0
    assert gpu.power_draw_w == 0
    assert (await cluster.kube.get_node(node=NODE)).gpu_allocatable == 7

    samples = await cluster.metrics.query(promql="DCGM_FI_DEV_XID_ERRORS")
    assert len(samples) == 16 * 8
    bad = [s for s in samples if s.value != 0]
    assert len(bad) == 1
    assert bad[0].value == 79
    assert bad[0].labels["Hostname"] == NODE
    assert bad[0].labels["gpu"] == "2"
    assert bad[0].labels["pod"] == "llama3-70b-pretrain-2"


async def test_recover_node_clears_the_xid(cluster: SimulatedCluster) -> None:
    """recover_node brings every GPU back healthy, with the readings it had before the fault."""
    before = await cluster.agent.gpus(node=NODE)
    inject_xid(cluster, node=NODE, gpu=2)
    thermal_runaway(cluster, node=NODE, gpu=5)
    recover_node(cluster, node=NODE)
    assert await cluster.agent.gpus(node=NODE) == before
    samples = await cluster.metrics.query(promql=f'DCGM_FI_DEV_XID_ERRORS{{Hostname="{NODE}"}}')
    assert [s.value for s in samples] == [0.0] * 8


async def test_thermal_runaway_and_power_cap(cluster: SimulatedCluster) -> None:
    """A runaway GPU reads hot at full power; capping its power lowers draw and temperature."""
    thermal_runaway(cluster, node=NODE, gpu=1, temperature_c=93)
    hot = await cluster.metrics.query(promql=f'DCGM_FI_DEV_GPU_TEMP{{Hostname="{NODE}", gpu="1"}}')
    assert [s.value for s in hot] == [93.0]

    capped = await cluster.agent.set_power_limit(node=NODE, gpu=1, watts=450)
    assert capped.power_limit_w == 450
    assert capped.power_draw_w == 450
    assert capped.temperature_c < 93
    with pytest.raises(InputError):
        await cluster.agent.set_power_limit(node=NODE, gpu=1, watts=100)


async def test_oom_kill_records_last_state(cluster: SimulatedCluster) -> None:
    """A host OOM kill reads OOMKilled/137; a CUDA OOM exits 1 with the CUDA message."""
    pod = "llama3-70b-pretrain-0"
    host = oom_kill(cluster, namespace="ml-train", pod=pod, kind="host")
    assert (host["reason"], host["exitCode"]) == ("OOMKilled", 137)
    cuda = oom_kill(cluster, namespace="ml-train", pod=pod)
    assert cuda["exitCode"] == 1
    assert "CUDA out of memory" in str(cuda["message"])
    sim_pod = cluster.snapshot().pod("ml-train", pod)
    assert sim_pod.last_state == cuda
    assert sim_pod.restart_count == 2
    with pytest.raises(NotFoundError):
        oom_kill(cluster, namespace="ml-train", pod="nope")


async def test_idle_pods_drop_utilisation(cluster: SimulatedCluster) -> None:
    """idle_pods leaves the chosen pods holding their GPUs at ~0 % utilisation."""
    refs = idle_pods(cluster, namespace="inference", count=2)
    assert len(refs) == 2
    for ref in refs:
        _, name = ref.split("/")
        samples = await cluster.metrics.query(promql=f'DCGM_FI_DEV_GPU_UTIL{{pod="{name}"}}')
        assert samples
        assert all(s.value <= 1 for s in samples)
    with pytest.raises(InputError):
        idle_pods(cluster, namespace="inference", count=1000)


async def test_state_persists_across_restart(tmp_path: Path) -> None:
    """Cordon, taint and XID state written to state_path is what a new process reads back."""
    path = tmp_path / "sim" / "cluster.json"
    first = SimulatedCluster.default(state_path=path)
    taint = Taint(key="gpubot.io/quarantine", effect="NoExecute")
    await first.kube.set_unschedulable(node=NODE, value=True, actor="gpubot", reason="XID 79")
    await first.kube.set_taint(node=NODE, taint=taint, present=True)
    inject_xid(first, node=NODE, gpu=4)
    assert [p.name for p in path.parent.iterdir()] == ["cluster.json"]  # no temp files left

    second = SimulatedCluster(state_path=path)
    node = await second.kube.get_node(node=NODE)
    assert node.unschedulable
    assert node.annotations[CORDON_BY_ANNOTATION] == "gpubot"
    assert node.has_taint("gpubot.io/quarantine", "NoExecute")
    assert (await second.agent.gpus(node=NODE))[4].lost
    assert second.snapshot().to_dict() == first.snapshot().to_dict()
    # default() on an existing file keeps the live state rather than a fresh fleet.
    assert (await SimulatedCluster.default(state_path=path).kube.get_node(node=NODE)).unschedulable


async def test_sees_changes_made_by_another_process(tmp_path: Path) -> None:
    """A change written to the shared file by another instance is visible without a restart."""
    path = tmp_path / "cluster.json"
    bot = SimulatedCluster.default(state_path=path)
    demo = SimulatedCluster(state_path=path)
    inject_xid(demo, node=NODE, gpu=0)
    assert (await bot.agent.gpus(node=NODE))[0].lost


async def test_metrics_label_matching(cluster: SimulatedCluster) -> None:
    """Equality matchers select series; DCGM labels and the cluster label are present."""
    samples = await cluster.metrics.query(promql='DCGM_FI_DEV_GPU_UTIL{Hostname="gpu-node-07"}')
    assert len(samples) == 8
    held = [s for s in samples if "pod" in s.labels]
    assert held
    assert all({"namespace", "container"} <= s.labels.keys() for s in held)
    assert all(
        s.labels["cluster"] == "sim" and s.labels["UUID"].startswith("GPU-") for s in samples
    )

    one = await cluster.metrics.query(
        promql=' DCGM_FI_DEV_FB_USED{ Hostname = "gpu-node-07", gpu="0", } '
    )
    free = await cluster.metrics.query(promql='DCGM_FI_DEV_FB_FREE{Hostname="gpu-node-07",gpu="0"}')
    assert len(one) == len(free) == 1
    assert one[0].value + free[0].value == H100_MEMORY_MIB

    ns = await cluster.metrics.query(promql='DCGM_FI_DEV_POWER_USAGE{namespace="research"}')
    assert ns
    assert all(s.labels["namespace"] == "research" for s in ns)
    unheld = await cluster.metrics.query(promql='DCGM_FI_DEV_GPU_UTIL{pod=""}')
    assert unheld
    assert all("pod" not in s.labels for s in unheld)
    assert await cluster.metrics.query(promql='DCGM_FI_DEV_GPU_UTIL{cluster="other"}') == []


async def test_unknown_node_raises_not_found(cluster: SimulatedCluster) -> None:
    """Every per-node call names the missing node instead of returning nothing."""
    with pytest.raises(NotFoundError, match="gpu-node-99"):
        await cluster.kube.get_node(node="gpu-node-99")
    with pytest.raises(NotFoundError):
        await cluster.agent.gpus(node="gpu-node-99")
    with pytest.raises(NotFoundError):
        await cluster.kube.set_unschedulable(node="gpu-node-99", value=True, actor="a", reason="r")
    with pytest.raises(NotFoundError):
        inject_xid(cluster, node=NODE, gpu=8)


@pytest.mark.parametrize(
    "promql",
    [
        "rate(DCGM_FI_DEV_XID_ERRORS[5m])",
        "DCGM_FI_DEV_GPU_UTIL + 1",
        'DCGM_FI_DEV_GPU_UTIL{Hostname=~"("}',
        "DCGM_FI_DEV_GPU_UTIL[5m]",
        "up",
        "",
    ],
)
async def test_unsupported_promql_raises_input_error(
    cluster: SimulatedCluster, promql: str
) -> None:
    """PromQL outside the simulated subset (test_simulated_promql.py) is refused, not guessed."""
    with pytest.raises(InputError, match="simulated metrics support only"):
        await cluster.metrics.query(promql=promql)


async def test_eviction_reschedules_and_frees_gpus(cluster: SimulatedCluster) -> None:
    """An evicted ReplicaSet pod comes back on a schedulable node; its old GPUs can be reset."""
    node = "gpu-node-07"
    await cluster.kube.set_unschedulable(node=node, value=True, actor="a", reason="r")
    state = cluster.snapshot()
    victim = next(p for p in state.pods if p.node == node and p.labels["app"] == "llm-chat")
    with pytest.raises(PermanentStepError, match="drain"):
        await cluster.agent.reset_gpu(node=node, gpu=victim.gpu_indices[0])

    await cluster.kube.evict(namespace="inference", name=victim.name)
    chat = [
        p
        for p in await cluster.kube.list_pods(namespace="inference")
        if p.labels["app"] == "llm-chat"
    ]
    assert len(chat) == 6
    assert victim.name not in {p.name for p in chat}
    newcomer = next(p for p in chat if p.name not in {q.name for q in state.pods})
    assert newcomer.node != node
    assert newcomer.phase == "Running"
    assert newcomer.gpu_request == 2

    inject_xid(cluster, node=node, gpu=victim.gpu_indices[0])
    reset = await cluster.agent.reset_gpu(node=node, gpu=victim.gpu_indices[0])
    assert reset.healthy
    assert reset.utilization_pct == 0


async def test_eviction_blocked_by_budget(cluster: SimulatedCluster) -> None:
    """With no disruptions allowed (all other nodes cordoned), eviction is refused for retry."""
    for name in cluster.node_names():
        await cluster.kube.set_unschedulable(node=name, value=True, actor="a", reason="r")
    chat = [
        p
        for p in await cluster.kube.list_pods(namespace="inference")
        if p.labels["app"] == "llm-chat"
    ]
    await cluster.kube.evict(namespace="inference", name=chat[0].name)
    with pytest.raises(DisruptionBlockedError, match="PodDisruptionBudget"):
        await cluster.kube.evict(namespace="inference", name=chat[1].name)
    # The refused eviction changed nothing; the first one's replacement waits for a node.
    after = {p.name: p for p in await cluster.kube.list_pods(namespace="inference")}
    assert chat[1].name in after
    assert [p.phase for p in after.values() if p.node == ""] == ["Pending"]
