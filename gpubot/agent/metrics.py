"""The node agent's own Prometheus counters, on a registry of its own, and their exposition.

Every label value comes from a fixed set (route templates, driver error kinds, a few
outcome words); anything else is counted as `other`, so no request can add a series.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable
from typing import get_args

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

from gpubot import __version__
from gpubot.agent.driver import DriverErrorKind

CONTENT_TYPE = CONTENT_TYPE_LATEST
KINDS = frozenset(get_args(DriverErrorKind))
# Refusals the HTTP layer itself answers, besides the driver's kinds.
HTTP_KINDS = frozenset({"unauthorized", "forbidden", "bad_request", "method_not_allowed"})
STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx")
RESET_OUTCOMES = frozenset({"healthy", "unhealthy", "dry_run"}) | KINDS
POWER_OUTCOMES = frozenset({"changed", "dry_run"}) | KINDS
DIAG_RESULTS = frozenset({"passed", "failed"}) | KINDS
XID_OUTCOMES = ("forwarded", "refused", "failed")
DRIVER_CALLS = frozenset({"system", "gpus", "processes", "set_power_limit", "reset", "wait_xid"})


def bounded(value: str, allowed: Iterable[str]) -> str:
    """`value` when it is one of `allowed`, else `other`."""
    return value if value in allowed else "other"


class AgentMetrics:
    """The counters `/metrics` serves, and the process's own series; the API, the operations
    and the XID sender count here."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        # The process (CPU, memory, open fds, start time) and the interpreter (version, GC):
        # a registry of its own starts without them.
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.build = Gauge(
            "gpubot_build_info",
            "Always 1: the gpubot version and the Python version this agent runs",
            ["version", "python"],
            registry=self.registry,
        )
        self.build.labels(__version__, platform.python_version()).set(1)
        self.requests = Counter(
            "gpubot_agent_requests",
            "HTTP requests by route template and outcome (ok, a refusal's kind, or status class)",
            ["route", "outcome"],
            registry=self.registry,
        )
        self.resets = Counter(
            "gpubot_agent_gpu_resets",
            "GPU resets by outcome (healthy, unhealthy, dry_run, or why it was refused or failed)",
            ["outcome"],
            registry=self.registry,
        )
        self.power_limits = Counter(
            "gpubot_agent_power_limit_changes",
            "Power-limit requests by action (set, restore) and outcome",
            ["action", "outcome"],
            registry=self.registry,
        )
        self.diagnostics = Counter(
            "gpubot_agent_diagnostics",
            "DCGM diagnostic runs by result (passed, failed, or why none ran to the end)",
            ["result"],
            registry=self.registry,
        )
        self.xid_events = Counter(
            "gpubot_agent_xid_events",
            "Critical XID events sent to the bot, by outcome (forwarded, refused, failed)",
            ["outcome"],
            registry=self.registry,
        )
        self.driver_errors = Counter(
            "gpubot_agent_nvml_errors",
            "Errors from the GPU driver (NVML, nvidia-smi) by call and kind",
            ["call", "kind"],
            registry=self.registry,
        )
        # Present at 0 from the start, so rate() and absent() work before the first event.
        for outcome in XID_OUTCOMES:
            self.xid_events.labels(outcome)
        for outcome in ("healthy", "unhealthy"):
            self.resets.labels(outcome)
        for result in ("passed", "failed"):
            self.diagnostics.labels(result)

    def request(self, *, route: str, outcome: str) -> None:
        self.requests.labels(route, outcome).inc()

    def reset(self, *, outcome: str) -> None:
        self.resets.labels(bounded(outcome, RESET_OUTCOMES)).inc()

    def power_limit(self, *, action: str, outcome: str) -> None:
        action = bounded(action, ("set", "restore"))
        self.power_limits.labels(action, bounded(outcome, POWER_OUTCOMES)).inc()

    def diagnostic(self, *, result: str) -> None:
        self.diagnostics.labels(bounded(result, DIAG_RESULTS)).inc()

    def xid_event(self, *, outcome: str) -> None:
        self.xid_events.labels(bounded(outcome, XID_OUTCOMES)).inc()

    def driver_error(self, *, call: str, kind: str) -> None:
        self.driver_errors.labels(bounded(call, DRIVER_CALLS), bounded(kind, KINDS)).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
