"""SimulatedCluster: KubeApi, NodeAgent and Metrics over an in-process GPU cluster."""

from __future__ import annotations

import contextlib
import json
import os
import random
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from gpubot.backends.simulated import promql as promql_subset
from gpubot.backends.simulated.diag import simulated_diag
from gpubot.backends.simulated.fleet import default_fleet
from gpubot.backends.simulated.pods import SimulatedPodReads
from gpubot.backends.simulated.state import (
    ClusterState,
    SimPod,
    clone_state,
    name_suffix,
)
from gpubot.backends.simulated.workloads import SimulatedWorkloads
from gpubot.domain.cluster import (
    CORDON_BY_ANNOTATION,
    CORDON_REASON_ANNOTATION,
    FleetView,
    GpuState,
    NodeInfo,
    PodDisruptionBudget,
    PodInfo,
    Sample,
    Taint,
)
from gpubot.domain.dcgm_diag import DiagReport
from gpubot.errors import (
    ConfigError,
    DisruptionBlockedError,
    InputError,
    NotFoundError,
    PermanentStepError,
)

# The taint the node controller adds to a cordoned node; kept so the simulator reads like one.
SIMULATED_NODE_IP = "127.0.0.1"  # what the simulated cluster reports as every node's address
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")

_METRICS: dict[str, Callable[[GpuState], float]] = {
    "DCGM_FI_DEV_GPU_UTIL": lambda g: g.utilization_pct,
    "DCGM_FI_DEV_GPU_TEMP": lambda g: g.temperature_c,
    "DCGM_FI_DEV_POWER_USAGE": lambda g: g.power_draw_w,
    "DCGM_FI_DEV_FB_USED": lambda g: g.memory_used_mib,
    "DCGM_FI_DEV_FB_FREE": lambda g: g.memory_total_mib - g.memory_used_mib,
    # The exporter reports the code of the last XID seen, 0 when there has been none.
    "DCGM_FI_DEV_XID_ERRORS": lambda g: g.xid_errors[-1] if g.xid_errors else 0,
}


class SimulatedCluster(SimulatedPodReads, SimulatedWorkloads):
    """A GPU cluster in memory, optionally backed by a JSON file that outlives the process.

    When `state_path` exists it wins over `state`: the file is the live cluster, and a
    restarted bot must see it as it was, as a real cluster outlives the bot.
    """

    def __init__(
        self,
        state: ClusterState | None = None,
        *,
        name: str = "sim",
        state_path: Path | None = None,
    ) -> None:
        self.name = name
        self._path = state_path
        self._lock = threading.Lock()
        self._seen: tuple[int, int] | None = None
        # The last fleet read, to count slots freed between reads (FleetView.released).
        self._fleet: tuple[frozenset[str], frozenset[str], int] = (frozenset(), frozenset(), 0)
        self._became: dict[str, int] = {}  # times each node was seen becoming cordoned
        # Node Events the bot posted: (node, type, reason, message); not persisted.
        self.node_events: list[tuple[str, str, str, str]] = []
        if state_path is not None and state_path.exists():
            self._state = self._load(state_path)
        else:
            self._state = state if state is not None else ClusterState()
            self._save()

    @classmethod
    def default(
        cls, *, name: str = "sim", state_path: Path | None = None, seed: int = 7
    ) -> SimulatedCluster:
        if state_path is not None and state_path.exists():
            return cls(name=name, state_path=state_path)
        return cls(default_fleet(seed=seed), name=name, state_path=state_path)

    def snapshot(self) -> ClusterState:
        """A copy of the whole state; change the cluster through `mutation()` or scenarios."""
        with self._lock:
            return clone_state(self._current())

    def node_names(self) -> list[str]:
        with self._lock:
            return list(self._current().nodes)

    @contextlib.contextmanager
    def mutation(self) -> Iterator[ClusterState]:
        """Change the state as one transaction: all of it is kept and written, or none."""
        with self._lock:
            # Work on a copy so a change that fails half-way leaves the cluster untouched.
            draft = clone_state(self._current())
            yield draft
            self._state = draft
            self._save()

    # KubeApi

    async def list_nodes(self) -> list[NodeInfo]:
        with self._lock:
            return [n.info() for n in self._current().nodes.values()]

    async def get_node(self, *, node: str, cached: bool = False) -> NodeInfo:
        # The state itself: always current, so a cached read is the same read.
        with self._lock:
            return self._current().node(node).info()

    async def gpu_fleet(self) -> FleetView:
        """Read from the state itself: always current (`live`)."""
        with self._lock:
            infos = [n.info() for n in self._current().nodes.values()]
            gpu = frozenset(n.name for n in infos if n.is_gpu_node)
            cordoned = frozenset(n.name for n in infos if n.is_gpu_node and n.unschedulable)
            seen_gpu, seen_cordoned, released = self._fleet
            if (seen_cordoned - cordoned) or (gpu - seen_gpu and seen_gpu):
                released += 1
            for name in cordoned - seen_cordoned:
                self._became[name] = self._became.get(name, 0) + 1
            self._fleet = (gpu, cordoned, released)
            became = dict(self._became)
        return FleetView(
            gpu_nodes=gpu,
            cordoned=cordoned,
            as_of=datetime.now(UTC),
            released=released,
            live=True,
            cordon_seen=became,
        )

    async def node_internal_ips(self) -> dict[str, str]:
        # Loopback for every node: a `gpubot agent --driver simulated` on this machine may
        # answer for one; with no agent configured the simulated GPUs answer in-process.
        return {name: SIMULATED_NODE_IP for name in self.node_names()}

    async def pod_ips_by_node(self, *, namespace: str, selector: str) -> dict[str, str]:
        return {name: SIMULATED_NODE_IP for name in self.node_names()}

    async def set_unschedulable(
        self,
        *,
        node: str,
        value: bool,
        actor: str,
        reason: str,
        dry_run: bool = False,
        expect_version: str = "",  # the simulated nodes keep no versions: reads return ""
    ) -> None:
        if dry_run:
            await self.get_node(node=node)  # the only check this API server makes
            return
        with self.mutation() as state:
            sim_node = state.node(node)
            sim_node.unschedulable = value
            sim_node.taints = [t for t in sim_node.taints if t != UNSCHEDULABLE_TAINT]
            if value:
                sim_node.taints.append(UNSCHEDULABLE_TAINT)
                sim_node.annotations[CORDON_BY_ANNOTATION] = actor
                sim_node.annotations[CORDON_REASON_ANNOTATION] = reason
            else:
                sim_node.annotations.pop(CORDON_BY_ANNOTATION, None)
                sim_node.annotations.pop(CORDON_REASON_ANNOTATION, None)

    async def set_taint(
        self, *, node: str, taint: Taint, present: bool, dry_run: bool = False
    ) -> None:
        if dry_run:
            await self.get_node(node=node)
            return
        with self.mutation() as state:
            sim_node = state.node(node)
            # Key and effect identify a taint; adding it again replaces its value.
            kept = [t for t in sim_node.taints if (t.key, t.effect) != (taint.key, taint.effect)]
            sim_node.taints = [*kept, taint] if present else kept

    async def set_node_metadata(
        self,
        *,
        node: str,
        labels: Mapping[str, str | None] | None = None,
        annotations: Mapping[str, str | None] | None = None,
    ) -> None:
        with self.mutation() as state:
            sim_node = state.node(node)
            for target, changes in ((sim_node.labels, labels), (sim_node.annotations, annotations)):
                for key, value in (changes or {}).items():
                    if value is None:
                        target.pop(key, None)
                    else:
                        target[key] = value

    async def post_node_event(
        self,
        *,
        node: str,
        reason: str,
        message: str,
        event_type: Literal["Normal", "Warning"] = "Normal",
    ) -> None:
        with self._lock:
            self._current().node(node)  # NotFoundError for an unknown node, as the API says
            self.node_events.append((node, event_type, reason, message))

    async def list_pods(
        self, *, node: str | None = None, namespace: str | None = None
    ) -> list[PodInfo]:
        with self._lock:
            return [
                p.info()
                for p in self._current().pods
                if (node is None or p.node == node)
                and (namespace is None or p.namespace == namespace)
            ]

    async def list_pdbs(self, *, namespace: str | None = None) -> list[PodDisruptionBudget]:
        with self._lock:
            state = self._current()
            return [
                state.pdb_info(b)
                for b in state.pdbs
                if namespace is None or b.namespace == namespace
            ]

    async def evict(self, *, namespace: str, name: str, grace_seconds: int | None = None) -> None:
        """Evict as the Eviction API does: refused while a budget allows no disruption.

        The pod is gone at once whatever `grace_seconds` says: nothing here runs to shut down,
        unless its node's kubelet is gone: then it stays, terminating, as on a real cluster.
        A pod already terminating is not checked against budgets again.
        """
        with self.mutation() as state:
            pod = state.pod(namespace, name)
            if pod.deletion_timestamp:
                return
            for pdb in state.pdbs_for(pod):
                if state.pdb_info(pdb).disruptions_allowed < 1:
                    raise DisruptionBlockedError(
                        f"evicting {pod.ref} would violate PodDisruptionBudget "
                        f"{pdb.namespace}/{pdb.name}",
                        budget=pdb.name,
                    )
            if pod.node and not state.node(pod.node).kubelet:
                _start_terminating(state, pod, grace_seconds)
                return
            _remove(state, pod)

    async def delete_pod(self, *, namespace: str, name: str, grace_seconds: int | None) -> None:
        """Delete as the API does: no budget is consulted; a controller recreates the pod.
        On a node without a kubelet only grace period 0 removes it; otherwise it terminates."""
        with self.mutation() as state:
            try:
                pod = state.pod(namespace, name)
            except NotFoundError:
                return  # already gone: what the caller wanted
            if pod.node and not state.node(pod.node).kubelet and grace_seconds != 0:
                _start_terminating(state, pod, grace_seconds)
                return
            _remove(state, pod)

    # NodeAgent

    async def gpus(self, *, node: str) -> list[GpuState]:
        with self._lock:
            return list(self._current().node(node).gpus)

    async def set_power_limit(self, *, node: str, gpu: int, watts: float) -> GpuState:
        return self.apply_power_limit(node=node, gpu=gpu, watts=watts)

    def apply_power_limit(self, *, node: str, gpu: int, watts: float) -> GpuState:
        """set_power_limit() for synchronous callers (the agent's simulated driver)."""
        with self.mutation() as state:
            sim_node = state.node(node)
            current = sim_node.gpu(gpu)
            if not current.power_min_w <= watts <= current.power_max_w:
                raise InputError(
                    f"power limit {watts:g} W is outside {node} GPU {gpu}'s range "
                    f"{current.power_min_w:g}-{current.power_max_w:g} W"
                )
            if current.lost:
                raise PermanentStepError(f"{node} GPU {gpu} is lost; NVML cannot reach it")
            draw = min(current.power_draw_w, watts)
            temperature = current.temperature_c
            if current.power_draw_w > 0 and temperature > 35:
                # Less power, less heat: the die cools roughly in proportion.
                temperature = 35 + round((temperature - 35) * draw / current.power_draw_w)
            updated = replace(
                current, power_limit_w=watts, power_draw_w=draw, temperature_c=temperature
            )
            sim_node.set_gpu(updated)
            return updated

    async def reset_gpu(self, *, node: str, gpu: int, uuid: str | None = None) -> GpuState:
        """Reset one GPU, as `nvidia-smi -r` would: only when no pod holds it."""
        return self.apply_reset(node=node, gpu=gpu, uuid=uuid)

    def apply_reset(self, *, node: str, gpu: int, uuid: str | None = None) -> GpuState:
        """reset_gpu() for synchronous callers (the agent's simulated driver)."""
        with self.mutation() as state:
            sim_node = state.node(node)
            current = sim_node.gpu(gpu)
            if uuid is not None and current.uuid != uuid:
                raise PermanentStepError(
                    f"{node} GPU {gpu} is {current.uuid}, not {uuid}; not resetting it"
                )
            holder = state.holder(node, gpu)
            if holder is not None:
                raise PermanentStepError(
                    f"{node} GPU {gpu} is held by {holder.ref}; drain the node before a reset"
                )
            sim_node.set_gpu(
                replace(current, lost=False, xid_errors=(), power_limit_w=current.power_default_w)
            )
            state.settle(node, gpu)
            return sim_node.gpu(gpu)

    async def diag(self, *, node: str, level: int, gpus: Sequence[int] | None = None) -> DiagReport:
        """DCGM diagnostics, as `dcgmi diag` on the node would run them (diag.py)."""
        return self.run_diag(node=node, level=level, gpus=gpus or ())

    def run_diag(self, *, node: str, level: int, gpus: Sequence[int] = ()) -> DiagReport:
        """diag() for synchronous callers (the agent's simulated driver)."""
        with self._lock:
            return simulated_diag(self._current(), node=node, level=level, gpus=gpus)

    # Metrics

    async def query(self, *, promql: str) -> list[Sample]:
        """A PromQL subset (see promql.py) over every GPU's current DCGM readings."""
        expr = promql_subset.parse(promql, metrics=_METRICS)
        with self._lock:
            series = self._gpu_series()

        def source(metric: str) -> list[tuple[dict[str, str], float]]:
            value_of = _METRICS[metric]
            return [({"__name__": metric, **labels}, float(value_of(g))) for labels, g in series]

        return promql_subset.evaluate(expr, source)

    def _gpu_series(self) -> list[tuple[dict[str, str], GpuState]]:
        """Each GPU with its labels as the DCGM exporter sets them; call with the lock held."""
        state = self._current()
        holders: dict[tuple[str, int], SimPod] = {}
        for pod in state.pods:  # one pass, not one per GPU: the benchmark fleet is 10,000 GPUs
            for index in pod.gpu_indices:
                holders.setdefault((pod.node, index), pod)
        series: list[tuple[dict[str, str], GpuState]] = []
        for node in state.nodes.values():
            for gpu in node.gpus:
                labels = {
                    "Hostname": node.name,
                    "gpu": str(gpu.index),
                    "UUID": gpu.uuid,
                    "modelName": gpu.name,
                    "cluster": self.name,
                }
                # The exporter sets pod labels only while a pod holds the GPU.
                if (holder := holders.get((node.name, gpu.index))) is not None:
                    labels |= {
                        "pod": holder.name,
                        "namespace": holder.namespace,
                        "container": holder.container,
                    }
                series.append((labels, gpu))
        return series

    # Persistence

    def _current(self) -> ClusterState:
        # Another process (a demo command injecting a fault) may have replaced the file.
        if self._path is not None:
            with contextlib.suppress(FileNotFoundError):
                stat = self._path.stat()
                if (stat.st_ino, stat.st_mtime_ns) != self._seen:
                    self._state = self._load(self._path)
        return self._state

    def _load(self, path: Path) -> ClusterState:
        stat = path.stat()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path} is not a simulated cluster state: {exc}") from exc
        state = ClusterState.from_dict(data)
        self._seen = (stat.st_ino, stat.st_mtime_ns)
        return state

    def _save(self) -> None:
        # Temp file + os.replace: a SIGKILL at any point leaves the old or the new state,
        # never half of one. No fsync: a killed process, not a lost machine, is what we model.
        # Blocking I/O on the event loop is fine here: the file is small and local.
        if self._path is None:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self._state.to_dict(), indent=1)
        fd, tmp = tempfile.mkstemp(dir=self._path.parent, prefix=f".{self._path.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, self._path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        stat = self._path.stat()
        self._seen = (stat.st_ino, stat.st_mtime_ns)


def _start_terminating(state: ClusterState, pod: SimPod, grace_seconds: int | None) -> None:
    """Deletion began but no kubelet confirms it: the pod stays listed with a
    deletionTimestamp. A ReplicaSet or Job replaces it at once (a terminating pod is not
    active); a StatefulSet waits until the name is free."""
    if pod.deletion_timestamp:
        return
    pod.deletion_timestamp = datetime.now(UTC).isoformat()
    # The API's default terminationGracePeriodSeconds when the request names none.
    pod.deletion_grace_seconds = 30 if grace_seconds is None else grace_seconds
    if pod.owner_kind and pod.owner_kind not in ("StatefulSet", "DaemonSet"):
        _recreate(state, pod)


def _remove(state: ClusterState, pod: SimPod) -> None:
    """The pod is gone: its GPUs go quiet, and its controller (if any) makes a new one."""
    state.pods.remove(pod)
    for index in pod.gpu_indices:
        state.settle(pod.node, index)
    replaced = pod.deletion_timestamp and pod.owner_kind not in ("StatefulSet", "DaemonSet")
    if pod.owner_kind and not replaced:
        _recreate(state, pod)


def _recreate(state: ClusterState, gone: SimPod) -> None:
    """What the pod's controller does after an eviction: start a replacement."""
    rng = random.Random(f"{state.seed}/{gone.ref}/{len(state.pods)}")  # noqa: S311 (names, not secrets)
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
        placement = state.schedulable_node(gpus=len(gone.gpu_indices))
        pod.gpu_indices = []
        if placement is not None:
            pod.node, pod.gpu_indices = placement
            pod.phase = "Running"
    state.pods.append(pod)
    for index in pod.gpu_indices:
        state.settle(pod.node, index)
