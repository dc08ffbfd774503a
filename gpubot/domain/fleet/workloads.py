"""Workloads that hold GPUs: what runs a pod, its replicas, and how to put it back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpubot.domain.fleet.cluster import PodInfo
from gpubot.knowledge.outside_numbers import ascii_int

# The kinds gpubot scales to zero; a bare Pod is deleted; anything else is left to a human.
SCALABLE_KINDS = ("Deployment", "StatefulSet")
# Written on the workload before it is scaled down, so a human can scale it back.
RECLAIMED_FROM_ANNOTATION = "gpubot.io/reclaimed-from-replicas"
RECLAIMED_BY_ANNOTATION = "gpubot.io/reclaimed-by"
TEMPLATE_HASH_LABEL = "pod-template-hash"


@dataclass(frozen=True)
class Workload:
    """A pod's controller (or the bare pod itself), as the API server reports it now."""

    namespace: str
    kind: str  # Deployment | StatefulSet | Pod (bare) | ReplicaSet | Job | DaemonSet | …
    name: str
    replicas: int | None = None  # desired replicas of a scalable kind; None otherwise
    gpus: int = 0  # GPUs its pods hold now
    pods: int = 0  # its pods now
    annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.name}"

    @property
    def scalable(self) -> bool:
        return self.kind in SCALABLE_KINDS

    @property
    def bare_pod(self) -> bool:
        return self.kind == "Pod"

    @property
    def recorded_replicas(self) -> int | None:
        """The replica count gpubot scaled this workload down from, if it did."""
        raw = self.annotations.get(RECLAIMED_FROM_ANNOTATION, "")
        return ascii_int(raw)

    def restore_hint(self, replicas: int | None) -> str:
        """How a human puts it back, as one line."""
        if self.scalable and replicas:
            return (
                f"kubectl -n {self.namespace} scale {self.kind.lower()}/{self.name} "
                f"--replicas={replicas}"
            )
        if self.bare_pod:
            return f"re-create {self.namespace}/{self.name} from its manifest (a bare pod)"
        return f"kubectl -n {self.namespace} get {self.kind.lower()}/{self.name}"


def owner_from_pod(pod: PodInfo) -> tuple[str, str]:
    """(kind, name) of what runs `pod`, from its owner reference alone.

    A ReplicaSet named `<deployment>-<pod-template-hash>` belongs to that Deployment (the
    Deployment controller names them so); no owner means a bare Pod.
    """
    if not pod.owner_kind:
        return "Pod", pod.name
    suffix = pod.labels.get(TEMPLATE_HASH_LABEL)
    if pod.owner_kind == "ReplicaSet" and suffix and pod.owner_name.endswith(f"-{suffix}"):
        return "Deployment", pod.owner_name[: -len(suffix) - 1]
    return pod.owner_kind, pod.owner_name
