"""Prometheus metrics of the bot itself, on a registry of its own (one per app)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram


class WebMetrics:
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
