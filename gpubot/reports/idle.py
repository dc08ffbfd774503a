"""The idle-GPU report, built from three PromQL results and the pod list (pure, no I/O)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from gpubot.domain.control.audit import AuditEvent
from gpubot.domain.fleet.cluster import PodInfo, Sample
from gpubot.domain.fleet.slurm import ACCOUNT_LABEL, JOB_NAMESPACE, USER_LABEL, is_job
from gpubot.domain.runbooks.action_names import Action
from gpubot.knowledge.outside_numbers import natural_key

# The DCGM exporter's labels (DESIGN: Alerts). Results are grouped by these in PromQL.
# `hpc_job` is its HPC job mapping (--hpc-job-mapping-dir, on Slurm nodes): the job that
# holds the GPU, where Kubernetes has a pod. Absent on Kubernetes, it groups nothing there.
_GPU_KEY = ("Hostname", "gpu", "namespace", "pod", "hpc_job")
_HPC_JOB = re.compile(r"[0-9]{1,10}", re.ASCII)
RECLAIM_ACTION = Action.WORKLOAD_RECLAIM


def _span(delta: timedelta) -> str:
    """A PromQL duration: whole minutes where possible (`90m`), else seconds."""
    seconds = int(delta.total_seconds())
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"


@dataclass(frozen=True)
class IdleQueries:
    """The report's only queries: three, whatever the fleet size, aggregated in Prometheus."""

    util: str
    memory: str
    idle_points: str
    step_hours: float

    @classmethod
    def build(
        cls, *, window: timedelta, threshold_pct: float, lookback: timedelta, step: timedelta
    ) -> IdleQueries:
        by = ", ".join(_GPU_KEY)
        w = _span(window)
        return cls(
            util=f"avg by ({by}, modelName) (avg_over_time(DCGM_FI_DEV_GPU_UTIL[{w}]))",
            memory=f"max by ({by}) (max_over_time(DCGM_FI_DEV_FB_USED[{w}]))",
            idle_points=(
                f"sum by ({by}) (count_over_time((DCGM_FI_DEV_GPU_UTIL < {threshold_pct:g})"
                f"[{_span(lookback)}:{_span(step)}]))"
            ),
            step_hours=step.total_seconds() / 3600,
        )

    def all(self) -> tuple[str, str, str]:
        return (self.util, self.memory, self.idle_points)


@dataclass(frozen=True)
class Pricing:
    """$ per GPU-hour: the longest configured key contained in the model name wins."""

    prices: Mapping[str, float] = field(default_factory=dict)
    default: float = 0.0

    def per_hour(self, model: str) -> float:
        hits = [k for k in self.prices if k and k.lower() in model.lower()]
        return self.prices[max(hits, key=len)] if hits else self.default


@dataclass(frozen=True)
class IdleAllocation:
    """One pod's idle GPUs."""

    namespace: str
    pod: str
    node: str
    gpus: tuple[str, ...]
    model: str
    owner: str
    team: str
    util_pct: float  # mean over the pod's GPUs, over the window
    memory_used_mib: float  # the most any of its GPUs used in the window
    idle_hours: float  # how long the least idle of its GPUs has been idle (lookback at most)
    idle_gpu_hours: float
    cost_usd: float

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.pod}"


@dataclass(frozen=True)
class NamespaceTotal:
    namespace: str
    team: str
    gpus: int
    idle_gpu_hours: float
    cost_usd: float


@dataclass(frozen=True)
class Reclaimed:
    """A reclamation from the audit trail, with what it saved inside the report's span."""

    namespace: str
    workload: str
    gpus: int
    model: str
    reclaimed_at: datetime
    saved_gpu_hours: float
    saved_usd: float


@dataclass(frozen=True)
class IdleReport:
    cluster: str
    generated_at: datetime
    window: timedelta
    lookback: timedelta
    threshold_pct: float
    fleet_gpus: int = 0
    allocated_gpus: int = 0
    fleet_util_pct: float | None = None
    idle: tuple[IdleAllocation, ...] = ()  # every idle allocation, most expensive first
    namespaces: tuple[NamespaceTotal, ...] = ()
    reclaimed: tuple[Reclaimed, ...] = ()
    # Every GPU in scope, for the heatmap: node -> ((gpu index, util % or None), ...);
    # None for a GPU no pod holds (free, so not wasted).
    node_util: tuple[tuple[str, tuple[tuple[str, float | None], ...]], ...] = ()
    namespace: str | None = None  # the report was asked for one namespace only
    error: str | None = None  # why the report could not be built (e.g. Prometheus down)
    queries: int = 0

    @property
    def idle_gpus(self) -> int:
        return sum(len(a.gpus) for a in self.idle)

    @property
    def idle_cost_usd(self) -> float:
        return sum(a.cost_usd for a in self.idle)

    @property
    def saved_gpu_hours(self) -> float:
        return sum(r.saved_gpu_hours for r in self.reclaimed)

    @property
    def saved_usd(self) -> float:
        return sum(r.saved_usd for r in self.reclaimed)


@dataclass(frozen=True)
class _Gpu:
    node: str
    gpu: str
    model: str
    namespace: str
    pod: str
    util: float
    key: tuple[str, ...] = ()  # its series' labels, as the other two queries group them


def _key(labels: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(labels.get(k, "") for k in _GPU_KEY)


def _holder(labels: Mapping[str, str]) -> tuple[str, str]:
    """(namespace, pod) holding the GPU: the pod's labels, or on Slurm the HPC job mapping's
    job id as a pod of namespace `slurm` (the adapter lists jobs so); anything but digits
    there names no holder."""
    pod = labels.get("pod", "")
    job = labels.get("hpc_job", "")
    if not pod and _HPC_JOB.fullmatch(job):
        return JOB_NAMESPACE, job
    return labels.get("namespace", ""), pod


def owner_of(pod: PodInfo | None) -> str:
    """`Kind/name` of what runs the pod; a ReplicaSet is shown as its Deployment."""
    if pod is None:
        return "?"
    if not pod.owner_kind:
        return f"Pod/{pod.name}"
    name = pod.owner_name
    suffix = pod.labels.get("pod-template-hash")
    if pod.owner_kind == "ReplicaSet" and suffix and name.endswith(f"-{suffix}"):
        return f"Deployment/{name[: -len(suffix) - 1]}"
    return f"{pod.owner_kind}/{name}"


def build_idle_report(
    *,
    cluster: str,
    now: datetime,
    queries: IdleQueries,
    window: timedelta,
    lookback: timedelta,
    threshold_pct: float,
    util: Sequence[Sample],
    memory: Sequence[Sample],
    idle_points: Sequence[Sample],
    pods: Sequence[PodInfo] | None,
    pricing: Pricing,
    teams: Mapping[str, str] | None = None,
    audit: Sequence[AuditEvent] = (),
    namespace: str | None = None,
) -> IdleReport:
    """Idle allocations (average utilisation below the threshold over `window`), joined with
    the pods that hold them, priced, totalled by namespace; plus reclamations since `lookback`.

    `pods=None` means the pod list could not be read: owners show as `?` and pods are kept.
    """
    teams = teams or {}
    mem = {_key(s.labels): s.value for s in memory}
    points = {_key(s.labels): s.value for s in idle_points}
    live = {(p.namespace, p.name): p for p in pods} if pods is not None else None
    gpus = [
        _Gpu(
            s.labels.get("Hostname", ""),
            s.labels.get("gpu", ""),
            s.labels.get("modelName", ""),
            *_holder(s.labels),
            s.value,
            _key(s.labels),
        )
        for s in util
        if s.value == s.value  # NaN: no data in the window
    ]
    by_pod: dict[tuple[str, str], list[_Gpu]] = defaultdict(list)
    for g in gpus:
        if g.pod and g.util < threshold_pct and (namespace is None or g.namespace == namespace):
            by_pod[(g.namespace, g.pod)].append(g)
    lookback_h = lookback.total_seconds() / 3600
    window_h = window.total_seconds() / 3600
    allocations = []
    for (ns, name), held in by_pod.items():
        pod = live.get((ns, name)) if live is not None else None
        if live is not None and pod is None:
            continue  # gone since: it holds no GPU now
        cap = lookback_h
        if pod is not None and pod.created_at is not None:
            cap = min(cap, max(0.0, (now - pod.created_at).total_seconds() / 3600))
        hours = [min(cap, max(points.get(g.key, 0.0) * queries.step_hours, window_h)) for g in held]
        model = held[0].model
        gpu_hours = sum(hours)
        group, owner = ns, owner_of(pod)
        if pod is not None and is_job(pod):
            # A Slurm job: totalled by its account, shown with its user.
            group = pod.labels.get(ACCOUNT_LABEL) or ns
            owner = f"job {pod.owner_name or name} (user {pod.labels.get(USER_LABEL) or '?'})"
        allocations.append(
            IdleAllocation(
                namespace=group,
                pod=name,
                node=held[0].node,
                gpus=tuple(sorted((g.gpu for g in held), key=_natural)),
                model=model,
                owner=owner,
                team=teams.get(group, group),
                util_pct=sum(g.util for g in held) / len(held),
                memory_used_mib=max(mem.get(g.key, 0.0) for g in held),
                idle_hours=min(hours),
                idle_gpu_hours=gpu_hours,
                cost_usd=gpu_hours * pricing.per_hour(model),
            )
        )
    allocations.sort(key=lambda a: (-a.cost_usd, -a.idle_gpu_hours, a.ref))
    scope = [g for g in gpus if namespace is None or g.namespace == namespace]
    nodes: dict[str, list[tuple[str, float | None]]] = defaultdict(list)
    for g in scope:
        nodes[g.node].append((g.gpu, g.util if g.pod else None))
    return IdleReport(
        cluster=cluster,
        generated_at=now,
        window=window,
        lookback=lookback,
        threshold_pct=threshold_pct,
        fleet_gpus=len(scope),
        allocated_gpus=sum(1 for g in scope if g.pod),
        fleet_util_pct=sum(g.util for g in scope) / len(scope) if scope else None,
        idle=tuple(allocations),
        namespaces=_totals(allocations),
        node_util=tuple(
            (node, tuple(sorted(cells, key=lambda c: _natural(c[0]))))
            for node, cells in sorted(nodes.items())
        ),
        reclaimed=reclaimed_since(
            audit, now=now, lookback=lookback, pricing=pricing, namespace=namespace
        ),
        namespace=namespace,
        queries=3,
    )


def _natural(text: str) -> tuple[int, str]:
    return natural_key(text)


def _totals(allocations: Sequence[IdleAllocation]) -> tuple[NamespaceTotal, ...]:
    sums: dict[str, list[Any]] = {}
    for a in allocations:
        row = sums.setdefault(a.namespace, [a.team, 0, 0.0, 0.0])
        row[1] += len(a.gpus)
        row[2] += a.idle_gpu_hours
        row[3] += a.cost_usd
    totals = [NamespaceTotal(ns, team, n, h, c) for ns, (team, n, h, c) in sums.items()]
    return tuple(sorted(totals, key=lambda t: (-t.cost_usd, t.namespace)))


def reclaimed_since(
    events: Sequence[AuditEvent],
    *,
    now: datetime,
    lookback: timedelta,
    pricing: Pricing,
    namespace: str | None = None,
) -> tuple[Reclaimed, ...]:
    """Reclamations recorded in the audit trail within `lookback`, each with the GPU-hours it
    has saved since it ran. One run of a daily report counts each reclamation once."""
    start = now - lookback
    found = []
    for event in events:
        result = event.result
        if event.action != RECLAIM_ACTION or event.dry_run or "gpus_released" not in result:
            continue
        try:
            at = datetime.fromisoformat(str(result.get("reclaimed_at") or event.ts.isoformat()))
            gpus = int(result["gpus_released"])
        except (TypeError, ValueError):
            continue  # not one of ours: the audit keeps what it was given
        at = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
        ns = str(result.get("namespace", ""))
        if gpus <= 0 or not start <= at <= now or (namespace is not None and ns != namespace):
            continue
        hours = (now - at).total_seconds() / 3600
        model = str(result.get("gpu_model", ""))
        saved = gpus * hours
        found.append(
            Reclaimed(
                namespace=ns,
                workload=str(result.get("workload", "")),
                gpus=gpus,
                model=model,
                reclaimed_at=at,
                saved_gpu_hours=saved,
                saved_usd=saved * pricing.per_hour(model),
            )
        )
    return tuple(sorted(found, key=lambda r: r.reclaimed_at))
