"""PodCache: the pods that request GPUs, by node, kept by one LIST and a WATCH (a Reflector).

What a plan's figures read ("N running GPU pods holding M GPUs keep running") without a
request per node: in a storm of cordons every request counts against the client's budget,
and one LIST per cordon would halve how many cordons that budget allows. Only GPU pods
bound to a node are kept (a pod's namespace, name, node, phase and GPU count, converted once
per event), so memory grows with the GPU workloads, not with every pod in the cluster.
Eviction, reset and triage never read it: they ask the server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from gpubot.backends.kube.convert import pod_gpus_json, pod_info_json
from gpubot.backends.kube.reflector import Reflector
from gpubot.domain.fleet.cluster import PodInfo

# What is kept of one pod: (namespace/name, the pod converted; None when it holds no GPU or
# is not bound to a node yet).
_Pod = tuple[str, PodInfo | None]


class PodCache(Reflector[_Pod]):
    """GPU pods by node, kept current by a watch over every namespace (see module doc)."""

    kind = "pod"
    # Every pod of a large cluster in one LIST could be hundreds of MB of JSON: pages of 500,
    # as client-go lists, each read down to its GPU pods before the next.
    page_size = 500

    def __init__(
        self,
        core: client.CoreV1Api,
        *,
        resync_seconds: float = 3600.0,
        watch_seconds: float = 60.0,
        request_timeout: float = 30.0,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        """A full re-list costs far more for pods than for Nodes: once an hour, and whenever
        the server says the watch's version is gone."""
        super().__init__(
            core.list_pod_for_all_namespaces,
            resync_seconds=resync_seconds,
            watch_seconds=watch_seconds,
            request_timeout=request_timeout,
            now=now,
        )
        self._by_node: dict[str, dict[str, PodInfo]] = {}
        self._where: dict[str, str] = {}  # namespace/name → the node it is kept under

    def gpu_pods(self, node: str) -> list[PodInfo] | None:
        """The GPU pods on `node` as the watch last delivered them, while the watch is open;
        None when it is not (read from the server then)."""
        with self._lock:
            if not self._live:
                return None
            return list(self._by_node.get(node, {}).values())

    # -- what is kept (the last two with the lock held) -------------------------------------

    def _digest(self, obj: Mapping[str, Any]) -> _Pod | None:
        meta = obj.get("metadata") or {}
        namespace, name = meta.get("namespace"), meta.get("name")
        if not isinstance(namespace, str) or not isinstance(name, str):
            return None
        key = f"{namespace}/{name}"
        node = (obj.get("spec") or {}).get("nodeName")
        try:
            gpus = pod_gpus_json(obj)
        except (TypeError, ValueError, AttributeError):
            gpus = 0
        if gpus <= 0 or not isinstance(node, str) or not node:
            return key, None
        try:
            return key, pod_info_json(obj)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            # A field that does not read: what the figures need still does.
            phase = (obj.get("status") or {}).get("phase")
            return key, PodInfo(
                namespace=namespace,
                name=name,
                node=node,
                phase=phase if isinstance(phase, str) else "Pending",
                gpu_request=gpus,
            )

    def _replace(self, digests: Sequence[_Pod]) -> None:
        self._by_node, self._where = {}, {}
        for digest in digests:
            self._apply("ADDED", digest)

    def _apply(self, event: str, digest: _Pod) -> None:
        key, info = digest
        node = self._where.pop(key, None)
        if node is not None:
            on_node = self._by_node[node]
            on_node.pop(key, None)
            if not on_node:
                del self._by_node[node]
        if event != "DELETED" and info is not None:
            self._where[key] = info.node
            self._by_node.setdefault(info.node, {})[key] = info
