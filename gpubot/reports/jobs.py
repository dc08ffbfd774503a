"""The idle-report job: build per cluster, draw the chart, post; say so when it cannot."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from gpubot.domain.results import Message, Text
from gpubot.ports import ReportPoster
from gpubot.reports.collect import Collected, IdleReporter
from gpubot.reports.idle_text import report_message

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobResult:
    reports: Sequence[Collected]

    @property
    def to_retry(self) -> list[str]:
        """Clusters whose report failed in a way that may pass."""
        return [c.report.cluster for c in self.reports if c.retryable]


class IdleReportJob:
    """Posts one report per cluster to the report channel, each with its chart."""

    def __init__(
        self,
        reporter: IdleReporter,
        poster: ReportPoster,
        *,
        channel: str | None,
        chart: bool = True,
    ) -> None:
        self.reporter = reporter
        self.poster = poster
        self.channel = channel
        self.chart = chart

    async def run(
        self, *, clusters: Sequence[str] | None = None, attempt: int = 0, final: bool = True
    ) -> JobResult:
        """One pass over the clusters (all, or those a retry names). A failure is posted on
        the first attempt and on the last, so the channel hears "unavailable, retrying" and
        "gave up", not every retry."""
        results = []
        for name in clusters if clusters is not None else self.reporter.cluster_names():
            collected = await self.reporter.build(cluster=name)
            results.append(collected)
            report = collected.report
            if report.error is not None and attempt > 0 and not final:
                continue  # a retry that failed again: already said so
            message = report_message(report, top=self.reporter.settings.top)
            if report.error is not None and collected.retryable:
                retry = self.reporter.settings.retry_every.total_seconds() / 60
                note = f"Retrying every {retry:g} min." if not final else "Gave up until next time."
                message = Message(message.title, (*message.blocks, Text(note)))
            png = None
            if self.chart and report.error is None:
                from gpubot.reports.chart import render_chart

                png = await asyncio.to_thread(render_chart, report)
            filename = f"idle-gpus-{name}-{report.generated_at:%Y%m%d-%H%M}.png"
            await self.poster.post_report(
                channel=self.channel, message=message, chart=png, filename=filename
            )
            log.info("idle report for %s posted (%d idle allocations)", name, len(report.idle))
        return JobResult(tuple(results))
