"""Prometheus metrics of the bot itself, on a registry of its own (one per app).

Counters go up where the event happens (the engine reports through the Tally methods);
gauges of what the store holds are read at each scrape by `StateCollector`, from one
read transaction of aggregate queries (`refresh` before the exposition is written).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gpubot.domain.fleet.store_counts import StateCounts
from gpubot.domain.runbooks.runs import RunStatus
from gpubot.engine.telemetry import RESULTS

log = logging.getLogger(__name__)
RUN_STATES = tuple(s.value for s in RunStatus if not s.finished)
SLACK_ERROR_KINDS = ("rate_limited", "server_error", "client_error")
AGENT_REFUSAL_KINDS = (
    "unauthenticated",
    "not_an_agent",
    "other_node",
    "other_cluster",
    "not_xid",
    "foreign_label",
    "malformed",
    "identity_unavailable",
)


class StateSource(Protocol):
    async def state_counts(self) -> StateCounts: ...


@dataclass(frozen=True)
class OutboxReading:
    """The Slack outbox at one moment: messages not yet sent, errors by kind since start."""

    pending: int = 0
    errors: Mapping[str, int] = field(default_factory=dict)


@dataclass
class Watched:
    """What the collector reads at a scrape; each part may be absent (no Slack, tests)."""

    store: StateSource | None = None
    is_leader: Callable[[], bool] | None = None
    now: Callable[[], datetime] | None = None
    outbox: Callable[[], OutboxReading] | None = None


class StateCollector(Collector):
    """Gauges from the last `refresh` (the store) and from live reads (leader, outbox)."""

    def __init__(self, watched: Watched) -> None:
        self.watched = watched
        self.counts: StateCounts | None = None
        self.store_up = 1.0

    async def refresh(self) -> None:
        if self.watched.store is None:
            return
        try:
            self.counts = await self.watched.store.state_counts()
            self.store_up = 1.0
        except Exception as exc:  # a scrape reports the store down, it does not fail
            log.warning(
                "metrics: store unreadable: %s",
                type(exc).__name__,
                extra={"event": "metrics.store_unreadable"},
            )
            self.counts, self.store_up = None, 0.0

    def collect(self) -> Iterator[Metric]:
        w = self.watched
        if w.store is not None:
            yield _gauge(
                "gpubot_store_up", "1 if the last scrape could read the store", self.store_up
            )
        if self.counts is not None:
            yield from self._store_gauges(self.counts)
        if w.is_leader is not None:
            leading = 1.0 if w.is_leader() else 0.0
            yield _gauge("gpubot_leader", "1 if this replica leads (starts steps)", leading)
        reading = w.outbox() if w.outbox is not None else OutboxReading()
        yield _gauge(
            "gpubot_slack_outbox_messages",
            "Slack messages queued or in flight in this replica's outbox",
            reading.pending,
        )
        errors = CounterMetricFamily(
            "gpubot_slack_api_errors",
            "Slack Web API calls that failed, by kind (rate_limited, server_error, client_error)",
            labels=["kind"],
        )
        for kind in SLACK_ERROR_KINDS:
            errors.add_metric([kind], reading.errors.get(kind, 0))
        yield errors

    def _store_gauges(self, c: StateCounts) -> Iterator[Metric]:
        yield _gauge("gpubot_incidents_open", "Incidents open now", c.incidents_open)
        runs = GaugeMetricFamily(
            "gpubot_runs", "Unfinished runs by state (from the store)", labels=["state"]
        )
        for state in RUN_STATES:
            runs.add_metric([state], c.runs.get(state, 0))
        yield runs
        yield _gauge(
            "gpubot_steps_held",
            "Steps the blast-radius cap holds now (a held run holds one step)",
            c.runs.get(RunStatus.HELD.value, 0),
        )
        yield _gauge("gpubot_approvals_pending", "Approval requests waiting", c.approvals_pending)
        age = 0.0
        if c.oldest_pending_approval is not None and self.watched.now is not None:
            age = max(0.0, (self.watched.now() - c.oldest_pending_approval).total_seconds())
        yield _gauge(
            "gpubot_approval_oldest_pending_age_seconds",
            "Age of the oldest pending approval request (0 when none)",
            age,
        )


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


class WebMetrics:
    """The registry `/metrics` serves; also the engine's Tally (its counters)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "gpubot_webhook_requests",
            "Alertmanager webhook requests by HTTP status code",
            ["code"],
            registry=self.registry,
        )
        self.alerts = Counter(
            "gpubot_alerts",
            "Alerts received, by intake outcome (opened, duplicate, …)",
            ["outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "gpubot_webhook_seconds",
            "Time to store an Alertmanager payload durably",
            registry=self.registry,
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5),
        )
        self.refusals = Counter(
            "gpubot_http_refusals",
            "Requests answered 4xx by the web layer, by route and status code",
            ["route", "code"],
            registry=self.registry,
        )
        self.agent_event_refusals = Counter(
            "gpubot_agent_event_refusals",
            "Posts to /agent/events refused, nothing stored, by why (unauthenticated, "
            "not_an_agent, other_node, other_cluster, not_xid, foreign_label, malformed, "
            "identity_unavailable)",
            ["kind"],
            registry=self.registry,
        )
        self.connections_shed = Counter(
            "gpubot_http_connections_shed",
            "Connections closed because max_connections were open, by what the one closed was "
            "doing: idle (no request), unauthenticated (a request not past its token), or "
            "over_bound (the new one: every other had authenticated)",
            ["reason"],
            registry=self.registry,
        )
        self.slack_foreign = Counter(
            "gpubot_slack_foreign_requests",
            "Signed Slack requests refused because they name another workspace, org or app",
            ["field"],
            registry=self.registry,
        )
        self.steps = Counter(
            "gpubot_step_outcomes",
            "Step outcomes by action and result (succeeded, failed, held, denied, …)",
            ["action", "result"],
            registry=self.registry,
        )
        self.runs_finished = Counter(
            "gpubot_runs_finished",
            "Runs that ended, by final status (succeeded, failed, cancelled)",
            ["status"],
            registry=self.registry,
        )
        self.attempt_refusals = Counter(
            "gpubot_attempt_cap_refusals",
            "Runs the attempt cap refused to start (too many runs on one node), by runbook",
            ["runbook"],
            registry=self.registry,
        )
        self.unrouted = Counter(
            "gpubot_alerts_unknown_cluster",
            "Alerts that named no configured cluster (or none, with several and no "
            "default_cluster): no runbook started",
            registry=self.registry,
        )
        for status in ("succeeded", "failed", "cancelled"):
            self.runs_finished.labels(status)  # present at 0 from the start, for rate()
        for kind in AGENT_REFUSAL_KINDS:
            self.agent_event_refusals.labels(kind)
        self.state = StateCollector(Watched())
        self.registry.register(self.state)

    def watch(self, watched: Watched) -> None:
        """What the state gauges read (wiring calls it once the parts exist)."""
        self.state.watched = watched

    async def refresh(self) -> None:
        await self.state.refresh()

    def shed(self, reason: str) -> None:
        self.connections_shed.labels(reason).inc()

    def slack_refused(self, field: str) -> None:
        self.slack_foreign.labels(field).inc()

    # -- Tally ---------------------------------------------------------------------------

    def step_outcome(self, *, action: str, result: str) -> None:
        self.steps.labels(action, result if result in RESULTS else "other").inc()

    def run_finished(self, *, status: str) -> None:
        self.runs_finished.labels(status).inc()

    def attempt_cap_refused(self, *, runbook: str) -> None:
        self.attempt_refusals.labels(runbook).inc()

    def alert_unrouted(self) -> None:
        self.unrouted.inc()
