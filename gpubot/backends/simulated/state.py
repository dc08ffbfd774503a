"""The simulated cluster's mutable state (nodes, GPUs, pods, budgets), what its API server and
controllers do to it (scheduling, evictions, replacements), and its JSON form."""

from __future__ import annotations

import pickle
import random
import uuid
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

from gpubot.domain.fleet.cluster import (
    DEFAULT_SHM_BYTES,
    ContainerTermination,
    GpuState,
    NodeInfo,
    PodDisruptionBudget,
    PodInfo,
    Taint,
)
from gpubot.errors import ConfigError, DisruptionBlockedError, NotFoundError

# What a pod does to the GPUs it holds; "idle" holds GPUs and leaves them at ~0 % utilisation.
Workload = Literal["training", "inference", "idle", "system"]

STATE_VERSION = 1
H100_NAME = "NVIDIA H100 80GB HBM3"
H100_MEMORY_MIB = 81559
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
# Taints that keep new pods off a node, as the scheduler reads them.
_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


# The classes below are mutable on purpose: they are the live cluster that API calls and
# scenarios change in place. Callers outside the simulator see frozen domain values only.
@dataclass
class SimNode:
    name: str
    labels: dict[str, str]
    gpus: list[GpuState]
    annotations: dict[str, str] = field(default_factory=dict)
    taints: list[Taint] = field(default_factory=list)
    unschedulable: bool = False
    ready: bool = True
    # False: the kubelet is gone (a hung node after XID 79); evicted pods stay terminating.
    kubelet: bool = True
    # DCGM diagnostics failures set by a scenario: GPU index (str) → {test: DCGM's message}.
    diag_failures: dict[str, dict[str, str]] = field(default_factory=dict)
    # Why DCGM cannot run on the node, set by a scenario ("" : it can): no dcgmi, host
    # engine down.
    dcgm_unavailable: str = ""
    # The node's kernel messages as `journalctl -k -o short-iso` prints them, set by scenarios.
    kernel_log: list[str] = field(default_factory=list)
    # Why the node agent cannot gather evidence, set by a scenario ("": it can).
    evidence_failure: str = ""

    def gpu(self, index: int) -> GpuState:
        if not 0 <= index < len(self.gpus):
            raise NotFoundError(f"node {self.name} has no GPU {index} (it has {len(self.gpus)})")
        return self.gpus[index]

    def set_gpu(self, gpu: GpuState) -> None:
        self.gpus[gpu.index] = gpu

    def info(self) -> NodeInfo:
        return NodeInfo(
            name=self.name,
            unschedulable=self.unschedulable,
            ready=self.ready,
            taints=tuple(self.taints),
            labels=dict(self.labels),
            annotations=dict(self.annotations),
            gpu_capacity=len(self.gpus),
            # The device plugin withdraws a lost GPU from allocatable, as it does on a real node.
            gpu_allocatable=sum(1 for g in self.gpus if not g.lost),
            gpu_product=self.labels.get(GPU_PRODUCT_LABEL, ""),
        )


@dataclass
class SimPod:
    namespace: str
    name: str
    node: str  # "" while Pending
    workload: Workload
    container: str
    created_at: datetime
    gpu_indices: list[int] = field(default_factory=list)
    owner_kind: str = ""
    owner_name: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    phase: str = "Running"
    restart_count: int = 0
    # The container's last terminated state as the Kubernetes API reports it
    # (reason, exitCode, signal, message, finishedAt); None until it has restarted.
    last_state: dict[str, str | int] | None = None
    # ISO 8601; set when an eviction started the pod's deletion on a node without a kubelet.
    deletion_timestamp: str | None = None
    deletion_grace_seconds: int | None = None

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def uid(self) -> str:
        """A stable metadata.uid, derived from the pod's namespace and name."""
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"sim/{self.namespace}/{self.name}"))

    def info(self) -> PodInfo:
        return PodInfo(
            namespace=self.namespace,
            name=self.name,
            node=self.node,
            phase=self.phase,
            gpu_request=len(self.gpu_indices),
            owner_kind=self.owner_kind,
            owner_name=self.owner_name,
            labels=dict(self.labels),
            annotations=dict(self.annotations),
            created_at=self.created_at,
            container=self.container,
            restart_count=self.restart_count,
            last_terminated=self.termination(),
            # Training pods in the fleet mount a 16 GiB /dev/shm; the rest keep the default.
            shm_size_bytes=16 << 30 if self.workload == "training" else DEFAULT_SHM_BYTES,
            memory_limit_bytes=(256 << 30) if self.workload == "training" else (64 << 30),
            deletion_timestamp=(
                datetime.fromisoformat(self.deletion_timestamp) if self.deletion_timestamp else None
            ),
            deletion_grace_seconds=self.deletion_grace_seconds,
            uid=self.uid,
        )

    def termination(self) -> ContainerTermination | None:
        if not self.last_state:
            return None
        last = self.last_state
        finished = last.get("finishedAt")
        signal = last.get("signal")
        return ContainerTermination(
            container=str(last.get("container", self.container)),
            reason=str(last.get("reason", "")),
            exit_code=int(last.get("exitCode", 0)),
            signal=int(signal) if signal is not None else None,
            message=str(last.get("message", "")),
            finished_at=datetime.fromisoformat(str(finished)) if finished else None,
        )


@dataclass
class SimPdb:
    namespace: str
    name: str
    selector: dict[str, str]
    min_available: int


@dataclass
class SimWorkload:
    """A controller whose desired replicas differ from "as many as it has pods" (it was scaled),
    with the annotations written on it and a pod shape to start new replicas from."""

    namespace: str
    kind: str
    name: str
    replicas: int
    annotations: dict[str, str] = field(default_factory=dict)
    template: dict[str, Any] | None = None  # JSON: workload, container, gpus, labels, owner

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.kind}/{self.name}"


@dataclass
class ClusterState:
    seed: int = 0
    nodes: dict[str, SimNode] = field(default_factory=dict)
    pods: list[SimPod] = field(default_factory=list)
    pdbs: list[SimPdb] = field(default_factory=list)
    workloads: dict[str, SimWorkload] = field(default_factory=dict)  # by SimWorkload.key

    def node(self, name: str) -> SimNode:
        try:
            return self.nodes[name]
        except KeyError:
            raise NotFoundError(f"no node named {name!r} in the simulated cluster") from None

    def pod(self, namespace: str, name: str) -> SimPod:
        for pod in self.pods:
            if pod.namespace == namespace and pod.name == name:
                return pod
        raise NotFoundError(f"no pod {namespace}/{name} in the simulated cluster")

    def holder(self, node: str, index: int) -> SimPod | None:
        """The pod that holds this GPU, if any."""
        for pod in self.pods:
            if pod.node == node and index in pod.gpu_indices:
                return pod
        return None

    def free_gpus(self, node: str) -> list[int]:
        held = {i for p in self.pods if p.node == node for i in p.gpu_indices}
        return [g.index for g in self.node(node).gpus if g.index not in held and not g.lost]

    def settle(self, node: str, index: int) -> None:
        """Set a healthy GPU's readings to what its holder's workload would show."""
        sim_node = self.node(node)
        gpu = sim_node.gpu(index)
        if gpu.lost:  # NVML reads nothing from a GPU that fell off the bus
            return
        holder = self.holder(node, index)
        workload = holder.workload if holder else None
        sim_node.set_gpu(steady_reading(gpu, node=node, workload=workload, seed=self.seed))

    def schedulable_node(self, *, gpus: int) -> tuple[str, list[int]] | None:
        """The first node the scheduler could bind a pod needing `gpus` GPUs to."""
        for node in self.nodes.values():
            if node.unschedulable or not node.ready:
                continue
            if any(t.effect in _BLOCKING_EFFECTS for t in node.taints):
                continue
            free = self.free_gpus(node.name)
            if len(free) >= gpus:
                return node.name, free[:gpus]
        return None

    def pdbs_for(self, pod: SimPod) -> list[SimPdb]:
        return [b for b in self.pdbs if _selects(b, pod)]

    def pdb_info(self, pdb: SimPdb) -> PodDisruptionBudget:
        # Computed the way the disruption controller does: healthy matching pods above the floor.
        healthy = sum(
            1
            for p in self.pods
            if p.phase == "Running" and p.node and not p.deletion_timestamp and _selects(pdb, p)
        )
        return PodDisruptionBudget(
            namespace=pdb.namespace,
            name=pdb.name,
            selector=dict(pdb.selector),
            disruptions_allowed=max(0, healthy - pdb.min_available),
        )

    # What the API server and the controllers do when a pod is evicted or deleted.

    def evict(self, namespace: str, name: str, grace_seconds: int | None) -> None:
        """Evict as the Eviction API does: refused while a budget allows no disruption.

        The pod is gone at once whatever `grace_seconds` says: nothing here runs to shut down,
        unless its node's kubelet is gone: then it stays, terminating, as on a real cluster.
        A pod already terminating is not checked against budgets again.
        """
        pod = self.pod(namespace, name)
        if pod.deletion_timestamp:
            return
        for pdb in self.pdbs_for(pod):
            if self.pdb_info(pdb).disruptions_allowed < 1:
                raise DisruptionBlockedError(
                    f"evicting {pod.ref} would violate PodDisruptionBudget "
                    f"{pdb.namespace}/{pdb.name}",
                    budget=pdb.name,
                )
        if pod.node and not self.node(pod.node).kubelet:
            self._start_terminating(pod, grace_seconds)
            return
        self._remove(pod)

    def delete(self, namespace: str, name: str, grace_seconds: int | None) -> None:
        """Delete as the API does: no budget is consulted; a controller recreates the pod.
        On a node without a kubelet only grace period 0 removes it; otherwise it terminates."""
        try:
            pod = self.pod(namespace, name)
        except NotFoundError:
            return  # already gone: what the caller wanted
        if pod.node and not self.node(pod.node).kubelet and grace_seconds != 0:
            self._start_terminating(pod, grace_seconds)
            return
        self._remove(pod)

    def _start_terminating(self, pod: SimPod, grace_seconds: int | None) -> None:
        """Deletion began but no kubelet confirms it: the pod stays listed with a
        deletionTimestamp. A ReplicaSet or Job replaces it at once (a terminating pod is not
        active); a StatefulSet waits until the name is free."""
        if pod.deletion_timestamp:
            return
        pod.deletion_timestamp = datetime.now(UTC).isoformat()
        # The API's default terminationGracePeriodSeconds when the request names none.
        pod.deletion_grace_seconds = 30 if grace_seconds is None else grace_seconds
        if pod.owner_kind and pod.owner_kind not in ("StatefulSet", "DaemonSet"):
            self._recreate(pod)

    def _remove(self, pod: SimPod) -> None:
        """The pod is gone: its GPUs go quiet, and its controller (if any) makes a new one."""
        self.pods.remove(pod)
        for index in pod.gpu_indices:
            self.settle(pod.node, index)
        replaced = pod.deletion_timestamp and pod.owner_kind not in ("StatefulSet", "DaemonSet")
        if pod.owner_kind and not replaced:
            self._recreate(pod)

    def _recreate(self, gone: SimPod) -> None:
        """What the pod's controller does after an eviction: start a replacement."""
        rng = random.Random(f"{self.seed}/{gone.ref}/{len(self.pods)}")  # noqa: S311 (names, not secrets)
        name = gone.name  # a StatefulSet pod comes back under its own name
        if gone.owner_kind != "StatefulSet":
            name = f"{gone.name.rsplit('-', 1)[0]}-{name_suffix(rng)}"
        pod = replace(
            gone,
            name=name,
            node="",
            phase="Pending",
            created_at=datetime.now(UTC),
            labels=dict(gone.labels),
            annotations=dict(gone.annotations),
            restart_count=0,
            last_state=None,
        )
        if gone.owner_kind == "DaemonSet":
            pod.node, pod.phase = gone.node, "Running"
        else:
            placement = self.schedulable_node(gpus=len(gone.gpu_indices))
            pod.gpu_indices = []
            if placement is not None:
                pod.node, pod.gpu_indices = placement
                pod.phase = "Running"
        self.pods.append(pod)
        for index in pod.gpu_indices:
            self.settle(pod.node, index)

    def to_dict(self) -> dict[str, Any]:
        pods = [{**asdict(p), "created_at": p.created_at.isoformat()} for p in self.pods]
        return {
            "version": STATE_VERSION,
            "seed": self.seed,
            "nodes": [asdict(n) for n in self.nodes.values()],
            "pods": pods,
            "pdbs": [asdict(b) for b in self.pdbs],
            "workloads": [asdict(w) for w in self.workloads.values()],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClusterState:
        if data.get("version") != STATE_VERSION:
            raise ConfigError(
                f"simulated cluster state has version {data.get('version')!r}; "
                f"this gpubot reads version {STATE_VERSION}"
            )
        try:
            nodes = [_node_from_dict(n) for n in data["nodes"]]
            pods = [
                SimPod(**{**p, "created_at": datetime.fromisoformat(p["created_at"])})
                for p in data["pods"]
            ]
            pdbs = [SimPdb(**b) for b in data["pdbs"]]
            scaled = [SimWorkload(**w) for w in data.get("workloads", [])]
            return cls(
                seed=int(data["seed"]),
                nodes={n.name: n for n in nodes},
                pods=pods,
                pdbs=pdbs,
                workloads={w.key: w for w in scaled},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"simulated cluster state is malformed: {exc!r}") from exc


def _selects(pdb: SimPdb, pod: SimPod) -> bool:
    return pdb.namespace == pod.namespace and all(
        pod.labels.get(k) == v for k, v in pdb.selector.items()
    )


def _node_from_dict(data: dict[str, Any]) -> SimNode:
    gpus = [
        GpuState(
            **{
                **g,
                "xid_errors": tuple(g["xid_errors"]),
                "throttle_reasons": tuple(g.get("throttle_reasons", ())),
            }
        )
        for g in data["gpus"]
    ]
    taints = [Taint(**t) for t in data["taints"]]
    return SimNode(**{**data, "gpus": gpus, "taints": taints})


def steady_reading(gpu: GpuState, *, node: str, workload: Workload | None, seed: int) -> GpuState:
    """The readings a healthy GPU settles at under a workload: the same every time for one GPU."""
    # Seeded per GPU and workload, so recovering a node gives back the readings it started with.
    rng = random.Random(f"{seed}/{node}/{gpu.index}/{workload}")  # noqa: S311 (a simulation)
    util, memory = 0, 0
    if workload == "training":
        util, memory = rng.randint(88, 99), rng.randint(68_000, 79_000)
    elif workload == "inference":
        util, memory = rng.randint(35, 70), rng.randint(18_000, 52_000)
    elif workload == "idle":
        # A notebook or sandbox with a model loaded: memory held, nothing computing.
        util, memory = rng.choice((0, 0, 0, 1)), rng.randint(500, 9_000)
    draw = round(rng.uniform(62.0, 78.0) + util * rng.uniform(5.6, 6.1), 1)
    temperature = 35 + round(util * 0.3) + rng.randint(0, 4)
    if draw > gpu.power_limit_w:
        # A power cap caps the heat too; the die cools roughly in proportion.
        temperature = 35 + round((temperature - 35) * gpu.power_limit_w / draw)
        draw = gpu.power_limit_w
    return replace(
        gpu,
        utilization_pct=util,
        memory_used_mib=min(memory, gpu.memory_total_mib),
        power_draw_w=draw,
        temperature_c=temperature,
    )


_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet Kubernetes draws name suffixes from


def name_suffix(rng: random.Random, length: int = 5) -> str:
    return "".join(rng.choice(_NAME_CHARS) for _ in range(length))


def clone_state(state: ClusterState) -> ClusterState:
    """A deep copy. A pickle round trip copies the fleet in about a third of deepcopy's time,
    which counts: every change to the simulated cluster copies all of it first."""
    blob = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    copied: ClusterState = pickle.loads(blob)  # noqa: S301 - our own bytes, never input
    return copied
