"""What the bot knows about a cluster: nodes, pods, GPUs, disruption budgets."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

# Who cordoned a node and why; a human uncordon clears it, which the bot notices.
CORDON_BY_ANNOTATION = "gpubot.io/cordoned-by"
CORDON_REASON_ANNOTATION = "gpubot.io/cordon-reason"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: TaintEffect = "NoSchedule"

    def __str__(self) -> str:
        return (
            f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"
        )


@dataclass(frozen=True)
class FleetView:
    """The GPU nodes of a cluster and which are cordoned, as known at `as_of`.

    `released` counts the times a cordoned GPU node came back (uncordoned or removed) or a
    GPU node joined: what can free a slot under the blast-radius cap. A view from a watch
    cache lags the API server by at most the watch's delivery latency while `live`; a view
    that is not live is at most as fresh as `as_of`.
    """

    gpu_nodes: frozenset[str]
    cordoned: frozenset[str]  # GPU nodes only
    as_of: datetime
    released: int = 0
    live: bool = False
    # How many times each GPU node was seen becoming cordoned: a cordon gpubot made is in the
    # view once its node's count has gone up since gpubot reserved the slot for it.
    cordon_seen: Mapping[str, int] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.gpu_nodes)


@dataclass(frozen=True)
class NodeInfo:
    name: str
    unschedulable: bool = False
    ready: bool = True
    taints: tuple[Taint, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    gpu_capacity: int = 0
    gpu_allocatable: int = 0
    gpu_product: str = ""
    # The scheduler still counts work on a node it was told to drain (Slurm's DRAINING, not
    # yet DRAINED): a drain is finished only once this is False. Kubernetes has no such state.
    draining: bool = False
    # metadata.resourceVersion as read ("" where the source keeps none): a write that
    # starts from this read sends it back, and the API server refuses it (409) if the
    # node changed since.
    resource_version: str = ""

    @property
    def is_gpu_node(self) -> bool:
        return self.gpu_capacity > 0

    def has_taint(self, key: str, effect: str | None = None) -> bool:
        return any(t.key == key and (effect is None or t.effect == effect) for t in self.taints)


@dataclass(frozen=True)
class ContainerTermination:
    """A container's last terminated state, as the pod status reports it."""

    container: str
    reason: str  # OOMKilled, Error, Completed, ...
    exit_code: int
    signal: int | None = None
    message: str = ""
    finished_at: datetime | None = None


@dataclass(frozen=True)
class PodEvent:
    type: str  # Normal | Warning
    reason: str
    message: str
    count: int = 1
    last_seen: datetime | None = None


DEFAULT_SHM_BYTES = 64 * 1024 * 1024  # a container's /dev/shm without an emptyDir mount


@dataclass(frozen=True)
class PodInfo:
    namespace: str
    name: str
    node: str
    phase: str = "Running"
    gpu_request: int = 0
    owner_kind: str = ""
    owner_name: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    created_at: datetime | None = None
    container: str = ""  # the main (first GPU-requesting) container
    restart_count: int = 0
    last_terminated: ContainerTermination | None = None
    memory_limit_bytes: int | None = None
    shm_size_bytes: int = DEFAULT_SHM_BYTES  # emptyDir medium: Memory sizeLimit when mounted
    # Set once the pod is being deleted (evicted); it stays listed until its kubelet confirms
    # the containers stopped, which never happens on a node whose kubelet is gone.
    deletion_timestamp: datetime | None = None
    # The grace period of that deletion (metadata.deletionGracePeriodSeconds): how long the
    # kubelet may take to stop the containers before the pod counts as stuck.
    deletion_grace_seconds: int | None = None
    # metadata.uid: the kernel names a pod's memory cgroup by it ("pod<uid>").
    uid: str = ""

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def terminating(self) -> bool:
        return self.deletion_timestamp is not None

    @property
    def is_daemonset(self) -> bool:
        return self.owner_kind == "DaemonSet"


@dataclass(frozen=True)
class PodDisruptionBudget:
    namespace: str
    name: str
    selector: Mapping[str, str]
    disruptions_allowed: int


@dataclass(frozen=True)
class GpuState:
    """One GPU as the node agent reads it (NVML on a real node)."""

    index: int
    uuid: str
    name: str
    memory_total_mib: int
    memory_used_mib: int = 0
    temperature_c: int = 35
    power_draw_w: float = 70.0
    power_limit_w: float = 700.0
    power_min_w: float = 200.0
    power_max_w: float = 700.0
    power_default_w: float = 700.0
    utilization_pct: int = 0
    xid_errors: tuple[int, ...] = ()
    lost: bool = False
    # NVML clocks-event reasons (sw_thermal_slowdown, sw_power_cap, …) where the agent reads them.
    throttle_reasons: tuple[str, ...] = ()
    pci_bus_id: str = ""  # canonical form (gpubot.knowledge.pci), "" where the agent has none

    @property
    def healthy(self) -> bool:
        return not self.lost and not self.xid_errors


@dataclass(frozen=True)
class Sample:
    """One Prometheus instant-vector sample."""

    labels: Mapping[str, str]
    value: float
