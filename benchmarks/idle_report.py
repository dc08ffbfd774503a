"""Idle report over 10,000 GPUs: Prometheus queries issued, and the time to build the report.

Prints one JSON line. The fleet is 1,250 nodes x 8 GPUs; 70 % of GPUs are held by pods of
1, 2, 4 or 8 GPUs, and one pod in ten is idle. The Metrics port answers from series built
beforehand, so the measured time is gpubot's own (join, pricing, totals, message, JSON),
with Prometheus time excluded. Chart rendering is timed separately.

Baselines from the same run: the queries a per-GPU approach would issue (3 per GPU), and
the time of the least any report must do: read the three result sets into dictionaries.
Targets: <= 3 queries, <= 2 s to build.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from datetime import UTC, datetime, timedelta

from gpubot.backends.simulated import SimulatedCluster, SimulatedKube
from gpubot.config import IdleReportSettings
from gpubot.domain.fleet.cluster import PodInfo, Sample
from gpubot.engine.clock import FakeClock
from gpubot.ports import ClusterPorts
from gpubot.reports.chart import render_chart
from gpubot.reports.collect import IdleReporter
from gpubot.reports.idle_text import report_json, report_message

MODEL = "NVIDIA H100 80GB HBM3"
NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


class Fleet:
    """Per-GPU series shaped like the three aggregated query results, and the pod list."""

    def __init__(self, gpus: int, seed: int = 7) -> None:
        rng = random.Random(seed)
        nodes = gpus // 8
        self.util: list[Sample] = []
        self.memory: list[Sample] = []
        self.idle: list[Sample] = []
        self.pods: list[PodInfo] = []
        n = 0
        for node_i in range(nodes):
            node = f"gpu-node-{node_i:05d}"
            gpu = 0
            while gpu < 8:
                size = min(rng.choice((1, 2, 4, 8)), 8 - gpu)
                held = rng.random() < 0.7
                idle = held and rng.random() < 0.1
                name = f"pod-{n}"
                n += 1
                ns = f"team-{n % 40}"
                if held:
                    self.pods.append(
                        PodInfo(
                            namespace=ns,
                            name=name,
                            node=node,
                            gpu_request=size,
                            owner_kind="Job",
                            owner_name=f"job-{n}",
                            created_at=NOW - timedelta(hours=rng.uniform(1, 100)),
                        )
                    )
                for g in range(gpu, gpu + size):
                    key = {"Hostname": node, "gpu": str(g)}
                    if held:
                        key |= {"namespace": ns, "pod": name}
                    util = rng.uniform(0, 3) if idle or not held else rng.uniform(30, 99)
                    self.util.append(Sample(key | {"modelName": MODEL}, util))
                    self.memory.append(Sample(key, rng.uniform(500, 70_000)))
                    if util < 5:
                        self.idle.append(Sample(key, float(rng.randint(12, 288))))
                gpu += size


class CountingMetrics:
    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.queries: list[str] = []

    async def query(self, *, promql: str) -> list[Sample]:
        self.queries.append(promql)
        if "FB_USED" in promql:
            return self.fleet.memory
        if "count_over_time" in promql:
            return self.fleet.idle
        return self.fleet.util


class Pods(SimulatedKube):
    def __init__(self, pods: list[PodInfo]) -> None:
        super().__init__(SimulatedCluster())
        self._bench_pods = pods

    async def list_pods(
        self, *, node: str | None = None, namespace: str | None = None, cached: bool = False
    ) -> list[PodInfo]:
        return self._bench_pods


class NoAudit:
    async def events(self, **filters: object) -> list[object]:
        return []


def baseline(fleet: Fleet) -> float:
    start = time.perf_counter()
    for rows in (fleet.util, fleet.memory, fleet.idle):
        {tuple(s.labels.values()): s.value for s in rows}
    {(p.namespace, p.name): p for p in fleet.pods}
    return time.perf_counter() - start


async def main(gpus: int, repeat: int) -> None:
    fleet = Fleet(gpus)
    metrics = CountingMetrics(fleet)
    kube = Pods(fleet.pods)
    reporter = IdleReporter(
        IdleReportSettings(),
        clusters={"bench": ClusterPorts("bench", kube, kube.cluster.agent, metrics)},
        audit=NoAudit(),  # type: ignore[arg-type]
        clock=FakeClock(NOW),
    )
    builds, bases = [], []
    for _ in range(repeat):
        metrics.queries.clear()
        start = time.perf_counter()
        collected = await reporter.build(cluster="bench")
        report_message(collected.report, top=10)
        report_json(collected.report)
        builds.append(time.perf_counter() - start)
        bases.append(baseline(fleet))
    report = collected.report
    start = time.perf_counter()
    png = render_chart(report)
    chart_s = time.perf_counter() - start
    build_s = statistics.median(builds)
    print(
        json.dumps(
            {
                "benchmark": "idle_report",
                "gpus": len(fleet.util),
                "pods": len(fleet.pods),
                "idle_allocations": len(report.idle),
                "idle_gpus": report.idle_gpus,
                "queries": len(metrics.queries),
                "baseline_queries_per_gpu_approach": 3 * len(fleet.util),
                "build_s_median": round(build_s, 4),
                "build_s_max": round(max(builds), 4),
                "baseline_read_results_s": round(statistics.median(bases), 4),
                "chart_s": round(chart_s, 3),
                "chart_bytes": len(png),
                "repeat": repeat,
                "target_queries": 3,
                "target_build_s": 2.0,
                "met": len(metrics.queries) <= 3 and build_s <= 2.0,
            }
        )
    )


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--gpus", type=int, default=10_000)
    cli.add_argument("--repeat", type=int, default=5)
    ns = cli.parse_args()
    asyncio.run(main(ns.gpus, ns.repeat))
