"""SimulatedDriver: one node of a SimulatedCluster seen as the agent's GpuDriver and XidSource."""

from __future__ import annotations

import time
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Protocol

from gpubot.agent.driver import (
    EccCounts,
    GpuDriverError,
    GpuProcess,
    GpuReport,
    SystemInfo,
    XidEvent,
)
from gpubot.domain.fleet.cluster import GpuState
from gpubot.domain.gpus.evidence import EvidencePart
from gpubot.errors import InputError, NotFoundError, PermanentStepError
from gpubot.knowledge.dcgm_diag import DiagReport

SIM_DRIVER_VERSION = "550.54.15"
SIM_CUDA_VERSION = "12.4"
# Where a simulated H100 starts to slow its clocks for heat (as nvidia-smi's "SW Thermal").
THERMAL_SLOWDOWN_C = 87
_POLL_S = 0.02


class _Node(Protocol):
    gpus: list[GpuState]


class _Pod(Protocol):
    @property
    def ref(self) -> str: ...


class _State(Protocol):
    def node(self, name: str) -> _Node: ...

    def holder(self, node: str, index: int) -> _Pod | None: ...


class SimulatedGpus(Protocol):
    """What the driver needs of gpubot.backends.simulated.SimulatedCluster (the agent layer
    does not import backends; the CLI passes the cluster in)."""

    def snapshot(self) -> _State: ...

    def apply_power_limit(self, *, node: str, gpu: int, watts: float) -> GpuState: ...

    def apply_reset(self, *, node: str, gpu: int, uuid: str | None = None) -> GpuState: ...

    def run_diag(self, *, node: str, level: int, gpus: Sequence[int] = ()) -> DiagReport: ...

    def dcgm_status(self, *, node: str) -> str | None: ...

    def evidence_parts(self, *, node: str) -> list[EvidencePart]: ...


class SimulatedDriver:
    """Reads and changes one node of the simulated cluster, as NVML would on that node."""

    def __init__(self, cluster: SimulatedGpus, *, node: str, reset_seconds: float = 0.0) -> None:
        self._cluster = cluster
        self._node = node
        self._reset_seconds = reset_seconds  # a real `nvidia-smi -r` takes seconds
        self._seen = self._xids()  # XIDs already there when the agent starts are not events

    def system(self) -> SystemInfo:
        return SystemInfo(SIM_DRIVER_VERSION, SIM_CUDA_VERSION, len(self._gpus()))

    def gpus(self) -> list[GpuReport]:
        return [_report(g) for g in self._gpus()]

    def processes(self, *, index: int) -> list[GpuProcess]:
        state = self._cluster.snapshot()
        gpu = self._gpu(index)
        if gpu.lost:
            raise GpuDriverError(f"GPU {index}: the GPU has fallen off the bus", kind="gpu_lost")
        holder = state.holder(self._node, index)
        if holder is None:
            return []
        pid = 1000 + zlib.crc32(holder.ref.encode()) % 60000  # stable per pod
        return [GpuProcess(pid=pid, used_memory_mib=gpu.memory_used_mib, name=holder.ref)]

    def set_power_limit(self, *, index: int, watts: float) -> None:
        self._gpu(index)
        try:
            self._cluster.apply_power_limit(node=self._node, gpu=index, watts=watts)
        except InputError as exc:
            raise GpuDriverError(str(exc), kind="invalid_argument") from exc
        except PermanentStepError as exc:
            raise GpuDriverError(str(exc), kind="gpu_lost") from exc

    def reset(self, *, index: int, timeout_s: float, uuid: str | None = None) -> str:
        self._gpu(index)
        if self._reset_seconds > 0:
            time.sleep(self._reset_seconds)  # blocking, as the real tool is; the API threads it
        try:
            self._cluster.apply_reset(node=self._node, gpu=index, uuid=uuid)
        except PermanentStepError as exc:
            raise GpuDriverError(str(exc), kind="in_use") from exc
        return f"GPU 0000:{index:02X}:00.0 was successfully reset. (simulated)"

    def status(self) -> str | None:
        """Whether DCGM can run on this node, as the simulated cluster says (a Diagnostics)."""
        return self._cluster.dcgm_status(node=self._node)

    def diagnose(self, *, level: int, gpus: Sequence[int]) -> DiagReport:
        """DCGM diagnostics as the simulated cluster answers them (a Diagnostics)."""
        try:
            return self._cluster.run_diag(node=self._node, level=level, gpus=gpus)
        except InputError as exc:
            raise GpuDriverError(str(exc), kind="invalid_argument") from exc
        except NotFoundError as exc:
            raise GpuDriverError(str(exc), kind="not_found") from exc
        except PermanentStepError as exc:
            raise GpuDriverError(str(exc), kind="in_use") from exc

    def gather(self) -> list[EvidencePart]:
        """Evidence as the simulated cluster shapes it (agent.evidence.Evidence)."""
        try:
            return self._cluster.evidence_parts(node=self._node)
        except (InputError, NotFoundError, PermanentStepError) as exc:
            raise GpuDriverError(str(exc), kind="busy") from exc

    def wait_xid(self, *, timeout_s: float) -> XidEvent | None:
        """The next XID that appears on this node's GPUs (e.g. from scenarios.inject_xid)."""
        deadline = time.monotonic() + timeout_s
        while True:
            current = self._xids()
            new = sorted(current - self._seen)
            if new:
                index, uuid, xid = new[0]
                self._seen.add(new[0])
                return XidEvent(gpu=index, uuid=uuid, xid=xid, at=datetime.now(UTC))
            self._seen &= current  # a cleared XID may come back later as a new event
            if time.monotonic() >= deadline:
                return None
            time.sleep(_POLL_S)

    def _xids(self) -> set[tuple[int, str, int]]:
        return {(g.index, g.uuid, x) for g in self._gpus() for x in g.xid_errors}

    def _gpus(self) -> list[GpuState]:
        return list(self._cluster.snapshot().node(self._node).gpus)

    def _gpu(self, index: int) -> GpuState:
        for gpu in self._gpus():
            if gpu.index == index:
                return gpu
        raise GpuDriverError(f"{self._node} has no GPU {index}", kind="not_found")


def _report(g: GpuState) -> GpuReport:
    if g.lost:
        return GpuReport(
            index=g.index,
            uuid=g.uuid,
            condition="lost",
            error=f"GPU {g.index}: the GPU has fallen off the bus (NVML_ERROR_GPU_IS_LOST)",
            xid_errors=g.xid_errors,
        )
    reasons: list[str] = []
    if g.utilization_pct == 0:
        reasons.append("gpu_idle")
    if g.power_draw_w >= 0.98 * g.power_limit_w:
        reasons.append("sw_power_cap")
    if g.temperature_c >= THERMAL_SLOWDOWN_C:
        reasons.append("sw_thermal_slowdown")
    return GpuReport(
        index=g.index,
        uuid=g.uuid,
        name=g.name,
        pci_bus_id=f"00000000:{0x18 + 0x10 * g.index:02X}:00.0",
        memory_total_mib=g.memory_total_mib,
        mig_mode="disabled",
        temperature_c=g.temperature_c,
        power_draw_w=g.power_draw_w,
        power_limit_w=g.power_limit_w,
        power_min_w=g.power_min_w,
        power_max_w=g.power_max_w,
        power_default_w=g.power_default_w,
        utilization_pct=g.utilization_pct,
        memory_used_mib=g.memory_used_mib,
        sm_clock_mhz=1980 if g.utilization_pct else 345,
        throttle_reasons=tuple(reasons),
        ecc=EccCounts(0, 0, 0, 0),
        remapped_rows_pending=False,
        remapped_rows_failed=False,
        unsupported=("retired_pages",),
        xid_errors=g.xid_errors,
    )
