"""Prometheus metrics of the bot itself, on a registry of its own (one per app).

Counters and histograms move where the event happens (the engine reports through the Tally
methods); the process's own series (CPU, memory, fds, Python GC) come from prometheus_client's
collectors, registered here since a registry of its own starts without them;
gauges of what the store holds are read at each scrape by `StateCollector`, from one
read transaction of aggregate queries (`refresh` before the exposition is written).
"""

from __future__ import annotations

import logging
import platform
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gpubot import __version__
from gpubot.domain.fleet.store_counts import StateCounts
from gpubot.domain.runbooks.runs import RunStatus
from gpubot.engine.telemetry import DECISIONS, DEPENDENCIES, RESULTS, STEP_ENDINGS, Dependency

log = logging.getLogger(__name__)
RUN_STATES = tuple(s.value for s in RunStatus if not s.finished)
RUN_ENDINGS = ("succeeded", "failed", "cancelled")
# From a cordon (a second) to a drain or a diagnostic (up to hours).
STEP_BUCKETS = (0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200)
# From a click in the minute to a request left overnight.
APPROVAL_BUCKETS = (10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400)
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
    # (shards held here, shards in all), when replicas execute by shard
    shards: Callable[[], tuple[int, int]] | None = None
    now: Callable[[], datetime] | None = None
    outbox: Callable[[], OutboxReading] | None = None


class StateCollector(Collector):
    """Gauges from the last `refresh` (the store) and from live reads (leader, outbox)."""

    def __init__(self, watched: Watched) -> None:
        self.watched = watched
        self.counts: StateCounts | None = None
        self.store_up = 1.0
        # Failed calls per dependency the engine counted (Slack's come from the outbox).
        self.dependency_errors: dict[str, int] = dict.fromkeys(DEPENDENCIES, 0)

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
        if w.shards is not None:
            held, total = w.shards()
            yield _gauge("gpubot_shards_held", "shards whose steps this replica executes", held)
            yield _gauge(
                "gpubot_shards",
                "shards the replicas split the nodes into (leader_election.shards)",
                total,
            )
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
        failed = CounterMetricFamily(
            "gpubot_dependency_errors",
            "Calls to a dependency that failed (unreachable, timed out, 5xx, refused, a bad "
            "answer), by dependency: kubernetes or slurm (the cluster's API), agent (the node "
            "agents), prometheus, audit (an append to the audit trail), slack (Web API calls)",
            labels=["dependency"],
        )
        for dependency in DEPENDENCIES:
            count = self.dependency_errors.get(dependency, 0)
            if dependency == "slack":
                count += sum(reading.errors.get(kind, 0) for kind in SLACK_ERROR_KINDS)
            failed.add_metric([dependency], count)
        yield failed

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
        # The process (CPU, memory, open fds, start time) and the interpreter (version, GC):
        # a registry of its own starts without them.
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.build = Gauge(
            "gpubot_build_info",
            "Always 1: the gpubot version and the Python version this process runs",
            ["version", "python"],
            registry=self.registry,
        )
        self.build.labels(__version__, platform.python_version()).set(1)
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
        self.step_seconds = Histogram(
            "gpubot_step_duration_seconds",
            "Time from a step's first start to its end (retries included), by runbook, action "
            "and outcome (succeeded, failed, needs_human, stopped)",
            ["runbook", "action", "outcome"],
            registry=self.registry,
            buckets=STEP_BUCKETS,
        )
        self.approval_seconds = Histogram(
            "gpubot_approval_latency_seconds",
            "Time from an approval request to its decision, by runbook and decision "
            "(approved, denied, expired: the time it waited before it expired)",
            ["runbook", "decision"],
            registry=self.registry,
            buckets=APPROVAL_BUCKETS,
        )
        self.runs_finished = Counter(
            "gpubot_runs_finished",
            "Runs that ended, by runbook and final status (succeeded, failed, cancelled)",
            ["runbook", "status"],
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
        for kind in AGENT_REFUSAL_KINDS:
            self.agent_event_refusals.labels(kind)
        self.state = StateCollector(Watched())
        self.registry.register(self.state)

    def runbooks(self, names: list[str]) -> None:
        """The runbooks loaded: their finished-run counters are present at 0 from the start,
        so rate() and absent() work before the first run ends."""
        for name in names:
            for status in RUN_ENDINGS:
                self.runs_finished.labels(name, status)

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

    def step_duration(self, *, runbook: str, action: str, outcome: str, seconds: float) -> None:
        outcome = outcome if outcome in STEP_ENDINGS else "other"
        self.step_seconds.labels(runbook, action, outcome).observe(seconds)

    def approval_decided(self, *, runbook: str, decision: str, seconds: float) -> None:
        decision = decision if decision in DECISIONS else "other"
        self.approval_seconds.labels(runbook, decision).observe(seconds)

    def run_finished(self, *, runbook: str, status: str) -> None:
        self.runs_finished.labels(runbook, status).inc()

    def dependency_error(self, *, dependency: Dependency) -> None:
        errors = self.state.dependency_errors
        errors[dependency] = errors.get(dependency, 0) + 1

    def attempt_cap_refused(self, *, runbook: str) -> None:
        self.attempt_refusals.labels(runbook).inc()

    def alert_unrouted(self) -> None:
        self.unrouted.inc()
