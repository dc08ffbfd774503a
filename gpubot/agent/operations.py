"""The agent's actions with their preconditions: power limit within range, reset only when free."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol

from gpubot.agent.dcgm import Diagnostics, check_gpus, check_level
from gpubot.agent.driver import GpuDriver, GpuDriverError, GpuReport
from gpubot.agent.evidence import Evidence, EvidenceGatherer
from gpubot.domain.gpus.evidence import EvidencePart


class Operations(Protocol):
    """What the HTTP API asks of the node: GpuOperations, or it observed (agent.observed)."""

    @property
    def driver(self) -> GpuDriver: ...

    def set_power_limit(
        self, *, index: int, watts: float, dry_run: bool = False
    ) -> dict[str, Any]: ...

    def restore_default(self, *, index: int, dry_run: bool = False) -> dict[str, Any]: ...

    def reset(
        self, *, index: int, uuid: str | None = None, dry_run: bool = False
    ) -> dict[str, Any]: ...

    def diag(self, *, level: int, gpus: Sequence[int] = ()) -> dict[str, Any]: ...

    def diag_status(self) -> str | None: ...

    def evidence(self) -> list[EvidencePart]: ...


class GpuOperations:
    """Checks preconditions, then acts through the driver; `dry_run` stops after the checks.

    Blocking, like the driver: the HTTP API calls it in a thread.
    """

    def __init__(
        self,
        driver: GpuDriver,
        *,
        reset_timeout_s: float = 120.0,
        diagnostics: Diagnostics | None = None,
        evidence: Evidence | None = None,
    ) -> None:
        self.driver = driver
        self.gatherer: Evidence = evidence or EvidenceGatherer()
        self.reset_timeout_s = reset_timeout_s
        self.diagnostics = diagnostics
        # One diagnostic run per node at a time: DCGM runs one, and it loads every GPU.
        self._diag_lock = threading.Lock()
        # GPUs with a reset under way: a second reset of one is refused at once, not queued
        # (two `nvidia-smi -r` on one device overlap badly); other GPUs are not held up.
        self._resetting: set[int] = set()
        self._resetting_lock = threading.Lock()

    def gpu(self, index: int) -> GpuReport:
        for report in self.driver.gpus():
            if report.index == index:
                return report
        raise GpuDriverError(f"this node has no GPU {index}", kind="not_found")

    def set_power_limit(self, *, index: int, watts: float, dry_run: bool = False) -> dict[str, Any]:
        before = self._usable(index)
        low, high = before.power_min_w, before.power_max_w
        if low is None or high is None:
            raise GpuDriverError(
                f"GPU {index} does not report its power-limit range; not changing it",
                kind="not_supported",
            )
        if not low <= watts <= high:
            raise GpuDriverError(
                f"power limit {watts:g} W is outside GPU {index}'s range {low:g}-{high:g} W",
                kind="out_of_range",
            )
        result: dict[str, Any] = {
            "gpu": index,
            "uuid": before.uuid,
            "previous_w": before.power_limit_w,
            "requested_w": watts,
            "default_w": before.power_default_w,
            "range_w": [low, high],
            "dry_run": dry_run,
        }
        if dry_run:
            return result
        self.driver.set_power_limit(index=index, watts=watts)
        after = self.gpu(index)
        return {**result, "limit_w": after.power_limit_w, "gpu_state": after.as_json()}

    def restore_default(self, *, index: int, dry_run: bool = False) -> dict[str, Any]:
        default = self._usable(index).power_default_w
        if default is None:
            raise GpuDriverError(
                f"GPU {index} does not report its default power limit", kind="not_supported"
            )
        return self.set_power_limit(index=index, watts=default, dry_run=dry_run)

    def reset(
        self, *, index: int, uuid: str | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """Reset GPU `index` when no process holds it; with `uuid`, only if that GPU is it."""
        with self._resetting_lock:
            if index in self._resetting:
                raise GpuDriverError(f"reset of GPU {index} already in progress", kind="busy")
            self._resetting.add(index)
        try:
            return self._reset(index=index, uuid=uuid, dry_run=dry_run)
        finally:
            with self._resetting_lock:
                self._resetting.discard(index)

    def _reset(self, *, index: int, uuid: str | None, dry_run: bool) -> dict[str, Any]:
        before = self.gpu(index)
        if uuid is not None and before.uuid != uuid:
            raise GpuDriverError(
                f"GPU {index} is {before.uuid or 'of unknown UUID'}, not {uuid}; "
                "refusing to reset a GPU other than the one named",
                kind="uuid_mismatch",
            )
        try:
            holders = self.driver.processes(index=index)
        except GpuDriverError as exc:
            if exc.kind != "gpu_lost":
                raise
            holders = []  # a lost GPU lists nothing; the bot drains the node before it asks
        if holders:
            pids = ", ".join(str(p.pid) + (f" ({p.name})" if p.name else "") for p in holders)
            raise GpuDriverError(
                f"GPU {index} is held by compute process(es) {pids}; drain the node first",
                kind="in_use",
            )
        result: dict[str, Any] = {"gpu": index, "uuid": before.uuid, "was": before.condition}
        if dry_run:
            return {**result, "dry_run": True}
        output = self.driver.reset(index=index, uuid=before.uuid, timeout_s=self.reset_timeout_s)
        # Health check: the GPU must read cleanly again, or the node needs a reboot.
        after = self.gpu(index)
        healthy = after.condition == "ok" and not after.xid_errors
        return {
            **result,
            "dry_run": False,
            "output": output[-2000:],
            "healthy": healthy,
            "gpu_state": after.as_json(),
        }

    def diag_status(self) -> str | None:
        """None when DCGM diagnostics can run on this node now; else one line why not."""
        if self.diagnostics is None:
            return "this agent has no DCGM diagnostics configured"
        return self.diagnostics.status()

    def diag(self, *, level: int, gpus: Sequence[int] = ()) -> dict[str, Any]:
        """DCGM diagnostics at `level` on `gpus` (empty: all), refused while any process
        holds a GPU it would test or a reset of one runs: they load every GPU tested."""
        level = check_level(level)
        chosen = check_gpus(gpus)
        if self.diagnostics is None:
            raise GpuDriverError(
                "this agent has no DCGM diagnostics configured", kind="dcgm_missing"
            )
        known = [r.index for r in self.driver.gpus()]
        for index in chosen:
            if index not in known:
                raise GpuDriverError(f"this node has no GPU {index}", kind="not_found")
        tested = list(chosen) or known
        with self._resetting_lock:
            resetting = sorted(set(tested) & self._resetting)
        if resetting:
            raise GpuDriverError(
                f"GPU(s) {resetting} are being reset; diagnose after the reset", kind="busy"
            )
        held = []
        for index in tested:
            try:
                holders = self.driver.processes(index=index)
            except GpuDriverError as exc:
                if exc.kind != "gpu_lost":
                    raise
                holders = []  # a lost GPU lists nothing; DCGM reports it failing
            held += [f"GPU {index}: {p.pid}" + (f" ({p.name})" if p.name else "") for p in holders]
        if held:
            raise GpuDriverError(
                f"refusing DCGM diagnostics while compute processes hold the GPUs it would "
                f"test ({', '.join(held[:5])}); drain the node first",
                kind="in_use",
            )
        if not self._diag_lock.acquire(blocking=False):
            raise GpuDriverError("a DCGM diagnostic is already running here", kind="busy")
        try:
            report = self.diagnostics.diagnose(level=level, gpus=chosen)
        finally:
            self._diag_lock.release()
        return report.as_json()

    def evidence(self) -> list[EvidencePart]:
        """What the node's tools say now (agent.evidence): each part bounded, none required."""
        return self.gatherer.gather()

    def _usable(self, index: int) -> GpuReport:
        report = self.gpu(index)
        if report.lost:
            raise GpuDriverError(report.error or f"GPU {index} is lost", kind="gpu_lost")
        return report
