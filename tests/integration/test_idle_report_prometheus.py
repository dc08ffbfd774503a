"""The idle report end to end against the real Prometheus (Debian package) scraping a
DCGM-exporter-shaped endpoint every second, through prometheus-api-client: three queries,
the idle pod found and priced, the busy and the free GPU not, and the job posting it with a
chart. With CI=true a missing `prometheus` binary fails this test."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from real_prometheus import DcgmExporter, ExporterGpu, RunningPrometheus, running_prometheus

from gpubot.backends.prometheus import PrometheusMetrics
from gpubot.backends.recording_chat import RecordingNotifier
from gpubot.backends.simulated import SimulatedCluster, SimulatedKube
from gpubot.config import IdleReportSettings
from gpubot.domain.fleet.cluster import PodInfo, Sample
from gpubot.engine.clock import SystemClock
from gpubot.ports import ClusterPorts
from gpubot.reports.collect import IdleReporter
from gpubot.reports.jobs import IdleReportJob

GPUS = [
    ExporterGpu("node-a", 0, util=1, fb_used=900, pod="jupyter", namespace="research"),
    ExporterGpu("node-a", 1, util=0, fb_used=300, pod="jupyter", namespace="research"),
    ExporterGpu("node-a", 2, util=93, fb_used=70_000, pod="train-0", namespace="ml"),
    ExporterGpu("node-b", 0, util=0, fb_used=0),  # free: no pod holds it
]


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningPrometheus]:
    with (
        DcgmExporter(GPUS) as exporter,
        running_prometheus(tmp_path_factory.mktemp("prom"), [exporter.target]) as prom,
    ):
        prom.wait_for_samples(5)
        yield prom


class Counting:
    def __init__(self, inner: PrometheusMetrics) -> None:
        self.inner = inner
        self.queries: list[str] = []

    async def query(self, *, promql: str) -> list[Sample]:
        self.queries.append(promql)
        return await self.inner.query(promql=promql)


class Pods(SimulatedKube):
    """The pod list of the exporter's workloads (the metrics come from Prometheus)."""

    async def list_pods(
        self, *, node: str | None = None, namespace: str | None = None, cached: bool = False
    ) -> list[PodInfo]:
        made = datetime.now(UTC) - timedelta(hours=5)
        return [
            PodInfo(namespace="research", name="jupyter", node="node-a", created_at=made),
            PodInfo(
                namespace="ml",
                name="train-0",
                node="node-a",
                owner_kind="Job",
                owner_name="train",
                created_at=made,
            ),
        ]


def reporter_for(prometheus: RunningPrometheus) -> tuple[IdleReporter, Counting]:
    metrics = Counting(PrometheusMetrics(url=prometheus.url, retries=0))
    sim = SimulatedCluster()
    kube = Pods(sim)
    settings = IdleReportSettings(
        window=timedelta(seconds=30),
        lookback=timedelta(minutes=1),
        step=timedelta(seconds=1),
        prices={"H100": 12.0},
    )
    ports = ClusterPorts(name="lab", kube=kube, agent=sim.agent, metrics=metrics)
    return (
        IdleReporter(settings, clusters={"lab": ports}, audit=NoAudit(), clock=SystemClock()),
        metrics,
    )


class NoAudit:
    """The audit log's read side: nothing reclaimed yet."""

    async def events(self, **filters: object) -> list[object]:
        return []


async def test_idle_pod_found_priced_and_posted(
    prometheus: RunningPrometheus, tmp_path: Path
) -> None:
    reporter, metrics = reporter_for(prometheus)
    collected = await reporter.build(cluster="lab")
    report = collected.report
    assert report.error is None
    assert len(metrics.queries) == 3  # whatever the fleet size
    assert [(a.ref, a.gpus, a.owner) for a in report.idle] == [
        ("research/jupyter", ("0", "1"), "Pod/jupyter")
    ]
    jupyter = report.idle[0]
    assert jupyter.util_pct < 5
    assert jupyter.memory_used_mib == 900
    # Idle for the whole (1 min) lookback at most, and at least the 30 s window.
    assert 30 / 3600 <= jupyter.idle_hours <= 60 / 3600
    assert jupyter.cost_usd == pytest.approx(jupyter.idle_gpu_hours * 12.0)
    assert report.fleet_gpus == 4
    assert report.allocated_gpus == 3
    assert report.fleet_util_pct == pytest.approx((1 + 0 + 93 + 0) / 4, abs=0.5)

    notifier = RecordingNotifier()
    result = await IdleReportJob(reporter, notifier, channel="#gpu-reports").run()
    assert result.to_retry == []
    [posted] = notifier.of("report")
    assert "research/jupyter" in posted.text
    [(filename, chart)] = notifier.charts
    assert filename.startswith("idle-gpus-lab-")
    assert chart is not None
    assert chart[:8] == b"\x89PNG\r\n\x1a\n"
