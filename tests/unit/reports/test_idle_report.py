"""The idle report builder: which allocations count as idle, how long, what they cost, and
what reclamation saved, from query results shaped as Prometheus returns them."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from gpubot.domain.control.audit import AuditEvent
from gpubot.domain.fleet.cluster import PodInfo, Sample
from gpubot.reports.idle import (
    IdleQueries,
    Pricing,
    build_idle_report,
    owner_of,
)
from gpubot.reports.idle_text import report_json, report_message

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"
Q = IdleQueries.build(
    window=timedelta(hours=1),
    threshold_pct=5,
    lookback=timedelta(hours=24),
    step=timedelta(minutes=5),
)
PRICING = Pricing({"H100": 12.0, "A100": 10.0, "A100-SXM4": 11.0}, default=1.0)


def gpu(node: str, idx: int, value: float, *, ns: str = "", pod: str = "", model: str = H100):
    labels = {"Hostname": node, "gpu": str(idx), "modelName": model}
    if pod:
        labels |= {"namespace": ns, "pod": pod}
    return Sample(labels, value)


def key(node: str, idx: int, value: float, *, ns: str = "", pod: str = "") -> Sample:
    labels = {"Hostname": node, "gpu": str(idx)}
    if pod:
        labels |= {"namespace": ns, "pod": pod}
    return Sample(labels, value)


def pod(ns: str, name: str, *, owner: tuple[str, str] = ("", ""), age_h: float = 72, **labels: str):
    return PodInfo(
        namespace=ns,
        name=name,
        node="n1",
        owner_kind=owner[0],
        owner_name=owner[1],
        labels=labels,
        created_at=NOW - timedelta(hours=age_h),
    )


def build(util, memory=(), points=(), pods=None, audit=(), namespace=None, teams=None):
    return build_idle_report(
        cluster="prod",
        now=NOW,
        queries=Q,
        window=timedelta(hours=1),
        lookback=timedelta(hours=24),
        threshold_pct=5,
        util=util,
        memory=memory,
        idle_points=points,
        pods=pods,
        pricing=PRICING,
        teams=teams,
        audit=audit,
        namespace=namespace,
    )


def test_queries_are_three_aggregations_whatever_the_fleet() -> None:
    """The report asks Prometheus three aggregated questions, never one per GPU."""
    assert Q.all() == (
        "avg by (Hostname, gpu, namespace, pod, hpc_job, modelName) "
        "(avg_over_time(DCGM_FI_DEV_GPU_UTIL[60m]))",
        "max by (Hostname, gpu, namespace, pod, hpc_job) (max_over_time(DCGM_FI_DEV_FB_USED[60m]))",
        "sum by (Hostname, gpu, namespace, pod, hpc_job) "
        "(count_over_time((DCGM_FI_DEV_GPU_UTIL < 5)[1440m:5m]))",
    )
    assert Q.step_hours == 5 / 60


def test_idle_is_below_threshold_on_allocated_gpus_only() -> None:
    """A pod's GPUs under 5 % are idle; a busy pod, and a free GPU at 0 %, are not."""
    report = build(
        [
            gpu("n1", 0, 1.5, ns="research", pod="nb"),
            gpu("n1", 1, 4.9, ns="research", pod="nb"),
            gpu("n1", 2, 88.0, ns="train", pod="job-0"),
            gpu("n1", 3, 0.0),  # no pod: free, not wasted
            gpu("n1", 4, 5.0, ns="train", pod="edge"),  # at the threshold: not below it
        ],
        points=[
            key("n1", 0, 288, ns="research", pod="nb"),
            key("n1", 1, 120, ns="research", pod="nb"),
        ],
    )
    assert [a.ref for a in report.idle] == ["research/nb"]
    nb = report.idle[0]
    assert nb.gpus == ("0", "1")
    assert math.isclose(nb.util_pct, 3.2)
    assert nb.idle_hours == 10.0  # the less idle GPU: 120 points x 5 min
    assert nb.idle_gpu_hours == 34.0  # 24 h + 10 h
    assert nb.cost_usd == 34.0 * 12.0
    assert report.fleet_gpus == 5
    assert report.allocated_gpus == 4
    assert math.isclose(report.fleet_util_pct or 0, (1.5 + 4.9 + 88 + 0 + 5) / 5)


def test_hours_idle_at_least_the_window_and_at_most_the_pods_age() -> None:
    """Idle on average over the window means idle that long, even if the count query lags;
    and nothing is idle for longer than its pod has existed."""
    report = build(
        [gpu("n1", 0, 0.0, ns="a", pod="young"), gpu("n1", 1, 0.0, ns="a", pod="new")],
        points=[key("n1", 0, 288, ns="a", pod="young")],
        pods=[pod("a", "young", age_h=3), pod("a", "new", age_h=30)],
    )
    hours = {a.pod: a.idle_hours for a in report.idle}
    assert hours == {"young": 3.0, "new": 1.0}


def test_pods_that_are_gone_are_dropped_and_owners_joined() -> None:
    """Rows are joined with the live pod list: a Deployment's pod shows its Deployment, a
    bare pod itself, and a pod that no longer exists holds no GPU and is left out."""
    report = build(
        [
            gpu("n1", 0, 0.0, ns="ml", pod="vllm-7c9f-abcde"),
            gpu("n1", 1, 0.0, ns="ml", pod="jupyter"),
            gpu("n1", 2, 0.0, ns="ml", pod="finished"),
            gpu("n1", 3, 0.0, ns="ml", pod="db-0"),
        ],
        pods=[
            pod(
                "ml",
                "vllm-7c9f-abcde",
                owner=("ReplicaSet", "vllm-7c9f"),
                **{"pod-template-hash": "7c9f"},
            ),
            pod("ml", "jupyter"),
            pod("ml", "db-0", owner=("StatefulSet", "db")),
        ],
    )
    owners = {a.pod: a.owner for a in report.idle}
    assert owners == {
        "vllm-7c9f-abcde": "Deployment/vllm",
        "jupyter": "Pod/jupyter",
        "db-0": "StatefulSet/db",
    }
    assert owner_of(None) == "?"


def test_without_the_pod_list_rows_stay_with_unknown_owner() -> None:
    report = build([gpu("n1", 0, 0.0, ns="ml", pod="p")], pods=None)
    assert [(a.ref, a.owner) for a in report.idle] == [("ml/p", "?")]


def test_cost_uses_the_most_specific_price_and_sorts_most_expensive_first() -> None:
    """`A100-SXM4` beats `A100` for an SXM4 card; an unlisted model gets the default."""
    report = build(
        [
            gpu("n1", 0, 0.0, ns="a", pod="cheap", model="Tesla T4"),
            gpu("n1", 1, 0.0, ns="b", pod="sxm", model=A100),
            gpu("n1", 2, 0.0, ns="b", pod="h", model=H100),
        ],
        points=[
            key("n1", 0, 12, ns="a", pod="cheap"),
            key("n1", 1, 12, ns="b", pod="sxm"),
            key("n1", 2, 12, ns="b", pod="h"),
        ],
    )
    assert [(a.pod, a.cost_usd) for a in report.idle] == [
        ("h", 12.0),
        ("sxm", 11.0),
        ("cheap", 1.0),
    ]
    assert [(t.namespace, t.gpus, t.cost_usd) for t in report.namespaces] == [
        ("b", 2, 23.0),
        ("a", 1, 1.0),
    ]
    assert report.idle_cost_usd == 24.0


def test_namespace_filter_and_team_names() -> None:
    report = build(
        [
            gpu("n1", 0, 0.0, ns="a", pod="x"),
            gpu("n1", 1, 0.0, ns="b", pod="y"),
            gpu("n1", 2, 50, ns="b", pod="z"),
        ],
        namespace="b",
        teams={"b": "vision"},
    )
    assert [a.ref for a in report.idle] == ["b/y"]
    assert report.idle[0].team == "vision"
    assert report.fleet_gpus == 2  # the namespace's GPUs only
    assert report.fleet_util_pct == 25.0


def test_nan_series_are_ignored() -> None:
    """A GPU with no data in the window (NaN) is neither idle nor part of the average."""
    report = build([gpu("n1", 0, float("nan"), ns="a", pod="x"), gpu("n1", 1, 10.0)])
    assert report.idle == ()
    assert report.fleet_gpus == 1


def reclaim_event(seq: int, at: datetime, **result: object) -> AuditEvent:
    return AuditEvent(
        ts=at,
        actor="U2",
        kind="step.finished",
        action="workload.reclaim",
        result={"reclaimed_at": at.isoformat(), **result},
        seq=seq,
    )


def test_reclaimed_gpu_hours_are_summed_within_the_lookback() -> None:
    """GPU-hours saved = GPUs released x hours since, for reclamations inside the report's
    span; older ones, dry runs and other actions are not counted."""
    events = [
        reclaim_event(
            1,
            NOW - timedelta(hours=10),
            gpus_released=4,
            gpu_model=H100,
            namespace="research",
            workload="Deployment/vllm",
        ),
        reclaim_event(
            2,
            NOW - timedelta(hours=2),
            gpus_released=1,
            gpu_model=A100,
            namespace="research",
            workload="Pod/jupyter",
        ),
        reclaim_event(
            3,
            NOW - timedelta(hours=30),
            gpus_released=8,
            gpu_model=H100,
            namespace="old",
            workload="Pod/x",
        ),
        AuditEvent(
            ts=NOW,
            actor="system",
            kind="step.finished",
            action="node.cordon",
            result={"gpus_released": 9},
            seq=4,
        ),
        AuditEvent(
            ts=NOW,
            actor="system",
            kind="step.finished",
            action="workload.reclaim",
            result={"gpus_released": 9, "namespace": "x"},
            dry_run=True,
            seq=5,
        ),
    ]
    report = build([gpu("n1", 0, 80.0)], audit=events)
    assert [(r.workload, r.saved_gpu_hours) for r in report.reclaimed] == [
        ("Deployment/vllm", 40.0),
        ("Pod/jupyter", 2.0),
    ]
    assert report.saved_gpu_hours == 42.0
    assert report.saved_usd == 40 * 12.0 + 2 * 11.0
    only = build([gpu("n1", 0, 80.0)], audit=events, namespace="elsewhere")
    assert only.reclaimed == ()


def test_message_and_json_carry_the_figures() -> None:
    report = build(
        [gpu("n1", 0, 0.0, ns="ml", pod="nb"), gpu("n1", 1, 90.0, ns="ml", pod="t")],
        points=[key("n1", 0, 36, ns="ml", pod="nb")],
        memory=[key("n1", 0, 2048, ns="ml", pod="nb")],
    )
    text = report_message(report, top=10).plain()
    assert text.startswith("Idle GPUs on prod: 1 allocated GPUs idle, $36.00 over the last 24 h")
    assert "ml/nb | Pod/nb" not in text  # no pod list given: owner unknown
    assert "ml/nb | ? | n1 | 1 | NVIDIA H100 80GB HBM3 | 0.0 | 2.0 | 3.0 | $36.00" in text
    assert "Fleet utilisation: 45.0 % average over 1 h" in text
    body = report_json(report)
    assert body["idle"][0] | {} == {
        "namespace": "ml",
        "pod": "nb",
        "owner": "?",
        "team": "ml",
        "node": "n1",
        "gpus": ["0"],
        "model": H100,
        "util_pct": 0.0,
        "memory_used_mib": 2048,
        "idle_hours": 3.0,
        "idle_gpu_hours": 3.0,
        "cost_usd": 36.0,
    }
    assert body["queries"] == 3
    assert body["fleet"] == {"gpus": 2, "allocated_gpus": 2, "avg_util_pct": 45.0}


def test_top_limits_rows_and_says_how_many_more() -> None:
    report = build([gpu("n1", i, 0.0, ns="a", pod=f"p{i}") for i in range(5)])
    text = report_message(report, top=2).plain()
    assert "… and 3 more idle allocations." in text
    assert len(report.idle) == 5
