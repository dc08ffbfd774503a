"""Gather what the idle report needs: three PromQL queries, the pod list, the audit trail."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from gpubot.config import IdleReportSettings
from gpubot.domain.control.audit import AuditEvent
from gpubot.domain.fleet.cluster import PodInfo
from gpubot.domain.results import Message, Text
from gpubot.errors import GpubotError, InputError, TemporaryStepError
from gpubot.ports import AuditLog, Clock, ClusterPorts
from gpubot.reports.idle import (
    RECLAIM_ACTION,
    IdleQueries,
    IdleReport,
    Pricing,
    build_idle_report,
)
from gpubot.reports.idle_text import report_message

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Collected:
    report: IdleReport
    retryable: bool = False  # the failure may pass (Prometheus down): try again later


class IdleReporter:
    """Builds idle reports for the configured clusters; never raises for a backend failure."""

    def __init__(
        self,
        settings: IdleReportSettings,
        *,
        clusters: Mapping[str, ClusterPorts],
        audit: AuditLog,
        clock: Clock,
    ) -> None:
        self.settings = settings
        self.clusters = clusters
        self.audit = audit
        self.clock = clock
        self.queries = IdleQueries.build(
            window=settings.window,
            threshold_pct=settings.threshold_pct,
            lookback=settings.lookback,
            step=settings.step,
        )
        self.pricing = Pricing(settings.prices, settings.default_price)

    def cluster_names(self, cluster: str | None = None) -> list[str]:
        """The clusters a report covers: the one named, the configured one, or all."""
        name = cluster or self.settings.cluster
        if name is None:
            return list(self.clusters)
        if name not in self.clusters:
            known = ", ".join(self.clusters) or "none"
            raise InputError(f"unknown cluster {name!r} (configured: {known})")
        return [name]

    async def summary(self, namespace: str | None = None) -> Message:
        """The report for `/gpu idle [namespace]`: every covered cluster, no chart."""
        top = self.settings.top
        built = [await self.build(cluster=c, namespace=namespace) for c in self.cluster_names()]
        messages = [report_message(c.report, top=top) for c in built]
        if len(messages) == 1:
            return messages[0]
        blocks = [block for m in messages for block in (Text(f"*{m.title}*"), *m.blocks)]
        return Message(f"Idle GPUs on {len(messages)} clusters", tuple(blocks))

    async def build(self, *, cluster: str, namespace: str | None = None) -> Collected:
        ports = self.clusters[cluster]
        s = self.settings
        now = self.clock.now()
        empty = IdleReport(
            cluster=cluster,
            generated_at=now,
            window=s.window,
            lookback=s.lookback,
            threshold_pct=s.threshold_pct,
            namespace=namespace,
        )
        try:
            util, memory, idle = await asyncio.gather(
                *(ports.metrics.query(promql=q) for q in self.queries.all())
            )
        except GpubotError as exc:
            temporary = isinstance(exc, TemporaryStepError)
            what = "Prometheus is unreachable" if temporary else "Prometheus refused the query"
            log.warning("idle report for %s: %s: %s", cluster, what, exc)
            return Collected(
                replace(empty, error=f"{what}, so there is no report: {exc}"), temporary
            )
        pods = await self._pods(ports)
        events = await self._reclaims(since=now - s.lookback)
        report = build_idle_report(
            cluster=cluster,
            now=now,
            queries=self.queries,
            window=s.window,
            lookback=s.lookback,
            threshold_pct=s.threshold_pct,
            util=util,
            memory=memory,
            idle_points=idle,
            pods=pods,
            pricing=self.pricing,
            teams=s.teams,
            audit=events,
            namespace=namespace,
        )
        return Collected(report)

    async def _pods(self, ports: ClusterPorts) -> list[PodInfo] | None:
        try:
            return await ports.pods.list_pods()
        except Exception as exc:  # a backend's edge: the report goes out without owners
            log.warning("idle report for %s: cannot list pods: %s", ports.name, exc)
            return None

    async def _reclaims(self, *, since: datetime) -> Sequence[AuditEvent]:
        try:
            return await self.audit.events(action=RECLAIM_ACTION, since=since)
        except Exception as exc:  # the store's edge: report without the savings line
            log.warning("idle report: cannot read the audit trail: %s", exc)
            return ()
