"""The agent's actions and driver calls, logged and counted: one line and one count per outcome.

`ObservedOperations` wraps GpuOperations: each reset, power-limit change and diagnostic
writes one log line with its outcome (a refusal's kind, or what happened) and counts it.
`ObservedDriver` counts each error the GPU driver raises, and each GPU it reads as lost or
unreadable, by call and kind.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from gpubot.agent.driver import (
    GpuDriver,
    GpuDriverError,
    GpuProcess,
    GpuReport,
    SystemInfo,
    XidEvent,
    XidSource,
)
from gpubot.agent.metrics import AgentMetrics
from gpubot.agent.operations import GpuOperations
from gpubot.agent.request_log import logged_elsewhere
from gpubot.domain.gpus.evidence import EvidencePart

log = logging.getLogger(__name__)
T = TypeVar("T")
_CONDITION_KINDS = {"lost": "gpu_lost", "no_permission": "no_permission", "error": "failed"}


def _line(text: str) -> str:
    return text.splitlines()[0] if text else "-"


class ObservedOperations:
    """GpuOperations with a log line and a count per action (the API calls it in a thread)."""

    def __init__(self, ops: GpuOperations, metrics: AgentMetrics) -> None:
        self._ops = ops
        self._metrics = metrics

    @property
    def driver(self) -> GpuDriver:
        return self._ops.driver

    def set_power_limit(self, *, index: int, watts: float, dry_run: bool = False) -> dict[str, Any]:
        return self._power(
            "set",
            index,
            dry_run,
            lambda: self._ops.set_power_limit(index=index, watts=watts, dry_run=dry_run),
        )

    def restore_default(self, *, index: int, dry_run: bool = False) -> dict[str, Any]:
        return self._power(
            "restore",
            index,
            dry_run,
            lambda: self._ops.restore_default(index=index, dry_run=dry_run),
        )

    def reset(
        self, *, index: int, uuid: str | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        try:
            result = self._ops.reset(index=index, uuid=uuid, dry_run=dry_run)
        except GpuDriverError as exc:
            self._metrics.reset(outcome=exc.kind)
            _refused("reset", "reset", index, exc)
            raise
        outcome = "dry_run" if dry_run else "healthy" if result.get("healthy") else "unhealthy"
        self._metrics.reset(outcome=outcome)
        level = logging.ERROR if outcome == "unhealthy" else logging.INFO
        words = {
            "dry_run": "would be reset (dry run: the checks passed)",
            "healthy": "reset; it reads healthy again",
            "unhealthy": "reset, but it does not read healthy: the node needs a reboot",
        }
        log.log(
            level,
            "GPU %d %s",
            index,
            words[outcome],
            extra={"event": "agent.reset", "action": "reset", "gpu": index, "result": outcome},
        )
        return result

    def diag_status(self) -> str | None:
        return self._ops.diag_status()

    def diag(self, *, level: int, gpus: Sequence[int] = ()) -> dict[str, Any]:
        try:
            result = self._ops.diag(level=level, gpus=gpus)
        except GpuDriverError as exc:
            self._metrics.diagnostic(result=exc.kind)
            _refused("diag", "DCGM diagnostic", None, exc)
            raise
        outcome = "passed" if result.get("passed") else "failed"
        self._metrics.diagnostic(result=outcome)
        failed = ", ".join(str(t) for t in result.get("failed_tests") or ()) or "-"
        log.log(
            logging.INFO if outcome == "passed" else logging.WARNING,
            "DCGM diagnostic level %d on GPUs %s: %s (failed tests: %s)",
            level,
            ",".join(str(g) for g in gpus) or "all",
            outcome,
            failed[:300],
            extra={"event": "agent.diag", "action": "diag", "result": outcome},
        )
        return result

    def evidence(self) -> list[EvidencePart]:
        try:
            parts = self._ops.evidence()
        except GpuDriverError as exc:
            _refused("evidence", "evidence gathering", None, exc)
            raise
        said = ", ".join(f"{p.name} {p.status}" for p in parts)
        log.log(
            logging.INFO if all(p.status == "ok" for p in parts) else logging.WARNING,
            "evidence gathered: %s (%d bytes)",
            said,
            sum(len(p.content) for p in parts),
            extra={"event": "agent.evidence", "action": "evidence", "result": said[:300]},
        )
        return parts

    def _power(
        self, action: str, index: int, dry_run: bool, run: Callable[[], dict[str, Any]]
    ) -> dict[str, Any]:
        try:
            result = run()
        except GpuDriverError as exc:
            self._metrics.power_limit(action=action, outcome=exc.kind)
            _refused(f"power_limit.{action}", f"power limit {action}", index, exc)
            raise
        outcome = "dry_run" if dry_run else "changed"
        self._metrics.power_limit(action=action, outcome=outcome)
        log.info(
            "GPU %d power limit %s: %s W to %s W%s",
            index,
            action,
            result.get("previous_w"),
            result.get("limit_w", result.get("requested_w")),
            " (dry run: the checks passed)" if dry_run else "",
            extra={
                "event": "agent.power_limit",
                "action": f"power_limit.{action}",
                "gpu": index,
                "result": outcome,
            },
        )
        return result


def _refused(action: str, words: str, index: int | None, exc: GpuDriverError) -> None:
    """One WARNING line for an action that was not done, as the request's only line."""
    logged_elsewhere()  # this line is the request's: the request log adds none
    target = f"GPU {index}" if index is not None else "this node"
    reason = _line(str(exc))
    log.warning(
        "%s on %s not done: %s (%s)",
        words,
        target,
        reason,
        exc.kind,
        extra={
            "event": "agent." + action.split(".")[0],
            "action": action,
            "gpu": index,
            "result": exc.kind,
            "reason": reason,
        },
    )


class ObservedDriver:
    """A GpuDriver (and XidSource) that counts every error of the one it wraps."""

    def __init__(
        self, driver: GpuDriver, metrics: AgentMetrics, *, xids: XidSource | None = None
    ) -> None:
        self._driver = driver
        self._xids = xids
        self._metrics = metrics

    def _call(self, call: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except GpuDriverError as exc:
            self._metrics.driver_error(call=call, kind=exc.kind)
            raise

    def system(self) -> SystemInfo:
        return self._call("system", self._driver.system)

    def gpus(self) -> list[GpuReport]:
        reports = self._call("gpus", self._driver.gpus)
        for report in reports:
            if report.condition != "ok":
                self._metrics.driver_error(call="gpus", kind=_CONDITION_KINDS[report.condition])
        return reports

    def processes(self, *, index: int) -> list[GpuProcess]:
        return self._call("processes", lambda: self._driver.processes(index=index))

    def set_power_limit(self, *, index: int, watts: float) -> None:
        self._call(
            "set_power_limit", lambda: self._driver.set_power_limit(index=index, watts=watts)
        )

    def reset(self, *, index: int, timeout_s: float, uuid: str | None = None) -> str:
        return self._call(
            "reset", lambda: self._driver.reset(index=index, timeout_s=timeout_s, uuid=uuid)
        )

    def wait_xid(self, *, timeout_s: float) -> XidEvent | None:
        if self._xids is None:
            return None
        xids = self._xids
        return self._call("wait_xid", lambda: xids.wait_xid(timeout_s=timeout_s))
