"""The default `sim` fleet: 16 nodes of 8 H100s running training, inference and idle pods."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta

from gpubot.backends.simulated.state import (
    GPU_PRODUCT_LABEL,
    H100_MEMORY_MIB,
    H100_NAME,
    ClusterState,
    SimNode,
    SimPdb,
    SimPod,
    Workload,
    name_suffix,
)
from gpubot.domain.fleet.cluster import GpuState

FLEET_SIZE = 16
GPUS_PER_NODE = 8
_EPOCH = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
# namespace, controller, name, workload, container, GPUs per pod, node number of each replica
_PLACEMENTS: tuple[tuple[str, str, str, Workload, str, int, tuple[int, ...]], ...] = (
    ("ml-train", "StatefulSet", "llama3-70b-pretrain", "training", "trainer", 8, (1, 2, 3, 4)),
    ("ml-train", "Job", "mixtral-finetune", "training", "trainer", 8, (5, 6)),
    ("inference", "Deployment", "llm-chat", "inference", "vllm", 2, (7, 7, 8, 8, 9, 9)),
    ("inference", "Deployment", "embeddings", "inference", "server", 1, (7, 7, 8, 8, 9, 9, 10, 10)),
    ("inference", "Deployment", "reranker", "inference", "server", 1, (10, 10, 11, 11)),
    ("research", "Job", "ablation-sweep", "training", "trainer", 4, (13,)),
    ("research", "Deployment", "vllm-sandbox", "idle", "vllm", 4, (12,)),
    ("research", "Pod", "jupyter-alice", "idle", "notebook", 1, (12,)),
    ("research", "Pod", "jupyter-bob", "idle", "notebook", 2, (13,)),
    ("research", "Pod", "jupyter-chen", "idle", "notebook", 1, (10,)),
)
# namespace, the Deployment the budget guards, minAvailable
_BUDGETS = (
    ("inference", "llm-chat", 5),
    ("inference", "embeddings", 6),
    ("inference", "reranker", 3),
)
_DAEMONSETS = (
    ("nvidia-dcgm-exporter", "nvidia-dcgm-exporter"),
    ("nvidia-device-plugin-daemonset", "nvidia-device-plugin"),
)


def node_name(number: int) -> str:
    return f"gpu-node-{number:02d}"


def default_fleet(*, seed: int = 7) -> ClusterState:
    """The `sim` fleet: 16 nodes of 8 H100s running training, inference and idle pods."""
    rng = random.Random(seed)  # noqa: S311 (a simulation, not secrets)
    state = ClusterState(seed=seed)
    for number in range(1, FLEET_SIZE + 1):
        name = node_name(number)
        gpus = [
            GpuState(
                index=i,
                uuid=f"GPU-{uuid.UUID(int=rng.getrandbits(128))}",
                name=H100_NAME,
                memory_total_mib=H100_MEMORY_MIB,
                pci_bus_id=f"0000:{0x18 + 0x10 * i:02x}:00.0",  # as the simulated agent's
            )
            for i in range(GPUS_PER_NODE)
        ]
        labels = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            GPU_PRODUCT_LABEL: H100_NAME,
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.count": str(GPUS_PER_NODE),
        }
        state.nodes[name] = SimNode(name=name, labels=labels, gpus=gpus)
        for daemonset, container in _DAEMONSETS:
            state.pods.append(
                SimPod(
                    namespace="gpu-operator",
                    name=f"{daemonset}-{name_suffix(rng)}",
                    node=name,
                    workload="system",
                    container=container,
                    created_at=_EPOCH - timedelta(days=30),
                    owner_kind="DaemonSet",
                    owner_name=daemonset,
                    labels={"app": daemonset},
                )
            )
    for namespace, kind, app, workload, container, per_pod, numbers in _PLACEMENTS:
        template_hash = name_suffix(rng, 10)
        for ordinal, number in enumerate(numbers):
            labels = {"app": app}
            owner_kind, owner_name, name = kind, app, f"{app}-{name_suffix(rng)}"
            if kind == "StatefulSet":
                name = f"{app}-{ordinal}"
                labels["statefulset.kubernetes.io/pod-name"] = name
            elif kind == "Deployment":
                owner_kind, owner_name = "ReplicaSet", f"{app}-{template_hash}"
                name = f"{owner_name}-{name_suffix(rng)}"
                labels["pod-template-hash"] = template_hash
            elif kind == "Job":
                labels["job-name"] = app
            else:  # a bare pod: nothing recreates it once it is gone
                owner_kind, owner_name, name = "", "", app
            state.pods.append(
                SimPod(
                    namespace=namespace,
                    name=name,
                    node=node_name(number),
                    workload=workload,
                    container=container,
                    created_at=_EPOCH - timedelta(minutes=rng.randint(90, 14 * 24 * 60)),
                    gpu_indices=state.free_gpus(node_name(number))[:per_pod],
                    owner_kind=owner_kind,
                    owner_name=owner_name,
                    labels=labels,
                )
            )
    state.pdbs = [
        SimPdb(namespace=ns, name=app, selector={"app": app}, min_available=floor)
        for ns, app, floor in _BUDGETS
    ]
    for node in state.nodes.values():
        for gpu in node.gpus:
            state.settle(node.name, gpu.index)
    return state
