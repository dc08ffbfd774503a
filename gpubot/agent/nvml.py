"""NvmlDriver: the GPUs of this node through NVML (nvidia-ml-py's pynvml); reset via nvidia-smi."""

from __future__ import annotations

import contextlib
import re
import subprocess
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, TypeVar

import pynvml

from gpubot.agent.driver import (
    DriverErrorKind,
    EccCounts,
    GpuCondition,
    GpuDriverError,
    GpuProcess,
    GpuReport,
    SystemInfo,
    XidEvent,
    throttle_names,
)

T = TypeVar("T")
_MIB = 1024 * 1024
_UUID = re.compile(r"(GPU|MIG)-[0-9A-Za-z-]{1,64}", re.ASCII)
_KINDS: dict[int, DriverErrorKind] = {
    pynvml.NVML_ERROR_LIBRARY_NOT_FOUND: "library_not_found",
    pynvml.NVML_ERROR_DRIVER_NOT_LOADED: "driver_not_loaded",
    pynvml.NVML_ERROR_NO_PERMISSION: "no_permission",
    pynvml.NVML_ERROR_NOT_SUPPORTED: "not_supported",
    pynvml.NVML_ERROR_GPU_IS_LOST: "gpu_lost",
    pynvml.NVML_ERROR_INVALID_ARGUMENT: "invalid_argument",
    pynvml.NVML_ERROR_NOT_FOUND: "not_found",
}
_HINTS: dict[DriverErrorKind, str] = {
    "library_not_found": "libnvidia-ml.so.1 was not found: install the NVIDIA driver on the "
    "node and mount its libraries into the agent (the NVIDIA container toolkit does this)",
    "driver_not_loaded": "the NVIDIA kernel module is not loaded on this node",
    "no_permission": "NVML refused: the agent needs root (or CAP_SYS_ADMIN) for this",
    "not_supported": "this GPU or driver does not support it",
    "gpu_lost": "the GPU has fallen off the bus (NVML_ERROR_GPU_IS_LOST, as after XID 79)",
}


def driver_error(exc: pynvml.NVMLError, what: str) -> GpuDriverError:
    """An NVML error as a GpuDriverError whose message says what to do about it."""
    code = int(getattr(exc, "value", -1))
    kind = _KINDS.get(code, "failed")
    hint = _HINTS.get(kind) or f"NVML error {code}: {exc}"
    return GpuDriverError(f"{what}: {hint}", kind=kind)


class _GpuLostError(Exception):
    pass


class _Reader:
    """Reads optional fields of one GPU: unsupported ones become None and are named."""

    def __init__(self) -> None:
        self.unsupported: list[str] = []
        self.errors: list[str] = []
        self.denied = False

    def get(self, name: str, read: Callable[[], T]) -> T | None:
        try:
            return read()
        except pynvml.NVMLError as exc:
            err = driver_error(exc, name)
            if err.kind == "gpu_lost":
                raise _GpuLostError(str(err)) from exc
            if err.kind == "not_supported":
                self.unsupported.append(name)
            else:
                self.denied = self.denied or err.kind == "no_permission"
                self.errors.append(str(err))
            return None


class NvmlDriver:
    """GpuDriver and XidSource on NVML. One per agent process; call close() at the end."""

    def __init__(
        self,
        *,
        nvidia_smi: str = "nvidia-smi",
        run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
    ) -> None:
        self._nvidia_smi = nvidia_smi
        self._run = run
        self._events: Any = None
        self._events_lock = threading.Lock()
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise driver_error(exc, "NVML init") from exc

    def close(self) -> None:
        if self._events is not None:
            pynvml.nvmlEventSetFree(self._events)
            self._events = None
        pynvml.nvmlShutdown()

    # -- reads -----------------------------------------------------------------------------

    def system(self) -> SystemInfo:
        reader = _Reader()
        driver = reader.get("driver_version", pynvml.nvmlSystemGetDriverVersion)
        cuda = reader.get("cuda_driver_version", pynvml.nvmlSystemGetCudaDriverVersion)
        count = self._count()
        cuda_text = f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda is not None else None
        return SystemInfo(
            driver_version=str(driver) if driver is not None else None,
            cuda_driver_version=cuda_text,
            gpu_count=count,
        )

    def gpus(self) -> list[GpuReport]:
        return [self._report(index) for index in range(self._count())]

    def processes(self, *, index: int) -> list[GpuProcess]:
        handle = self._handle(index)
        try:
            procs = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
        except pynvml.NVMLError as exc:
            raise driver_error(exc, f"GPU {index} compute processes") from exc
        return [
            GpuProcess(
                pid=int(p.pid),
                used_memory_mib=int(p.usedGpuMemory) // _MIB
                if p.usedGpuMemory is not None
                else None,
            )
            for p in procs
        ]

    def _count(self) -> int:
        try:
            return int(pynvml.nvmlDeviceGetCount())
        except pynvml.NVMLError as exc:
            raise driver_error(exc, "GPU count") from exc

    def _handle(self, index: int) -> Any:
        try:
            return pynvml.nvmlDeviceGetHandleByIndex(index)
        except pynvml.NVMLError as exc:
            raise driver_error(exc, f"GPU {index}") from exc

    def _report(self, index: int) -> GpuReport:
        try:
            handle = self._handle(index)
        except GpuDriverError as exc:
            return GpuReport(index=index, condition=_condition(exc), error=str(exc))
        r = _Reader()
        try:
            return self._read(index, handle, r)
        except _GpuLostError as exc:
            uuid = None
            with contextlib.suppress(pynvml.NVMLError):  # a lost GPU may not even say who it is
                uuid = str(pynvml.nvmlDeviceGetUUID(handle))
            return GpuReport(index=index, uuid=uuid, condition="lost", error=str(exc))

    def _read(self, index: int, h: Any, r: _Reader) -> GpuReport:
        nv = pynvml
        memory = r.get("memory", lambda: nv.nvmlDeviceGetMemoryInfo(h))
        limits = r.get(
            "power_limit_constraints", lambda: nv.nvmlDeviceGetPowerManagementLimitConstraints(h)
        )
        util = r.get("utilization", lambda: nv.nvmlDeviceGetUtilizationRates(h))
        mig = r.get("mig_mode", lambda: nv.nvmlDeviceGetMigMode(h))
        reasons = r.get("throttle_reasons", lambda: _clock_event_reasons(h))
        remap = r.get("remapped_rows", lambda: nv.nvmlDeviceGetRemappedRows(h))
        retired = r.get("retired_pages", lambda: _retired_pages(h))
        report = GpuReport(
            index=index,
            uuid=_text(r.get("uuid", lambda: nv.nvmlDeviceGetUUID(h))),
            name=_text(r.get("name", lambda: nv.nvmlDeviceGetName(h))),
            pci_bus_id=_text(r.get("pci_bus_id", lambda: nv.nvmlDeviceGetPciInfo(h).busId)),
            memory_total_mib=int(memory.total) // _MIB if memory is not None else None,
            memory_used_mib=int(memory.used) // _MIB if memory is not None else None,
            mig_mode=("enabled" if mig[0] else "disabled") if mig is not None else None,
            temperature_c=_int(
                r.get(
                    "temperature",
                    lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
                )
            ),
            power_draw_w=_watts(r.get("power_draw", lambda: nv.nvmlDeviceGetPowerUsage(h))),
            power_limit_w=_watts(
                r.get("power_limit", lambda: nv.nvmlDeviceGetPowerManagementLimit(h))
            ),
            power_min_w=_watts(limits[0]) if limits is not None else None,
            power_max_w=_watts(limits[1]) if limits is not None else None,
            power_default_w=_watts(
                r.get("power_default", lambda: nv.nvmlDeviceGetPowerManagementDefaultLimit(h))
            ),
            utilization_pct=int(util.gpu) if util is not None else None,
            sm_clock_mhz=_int(
                r.get("sm_clock", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
            ),
            throttle_reasons=throttle_names(reasons) if reasons is not None else None,
            ecc=_ecc(h, r),
            retired_pages=retired,
            remapped_rows_pending=bool(remap[2]) if remap is not None else None,
            remapped_rows_failed=bool(remap[3]) if remap is not None else None,
        )
        return replace(
            report,
            unsupported=tuple(dict.fromkeys(r.unsupported)),
            error="; ".join(r.errors),
            condition="no_permission" if r.denied else "ok",
        )

    # -- actions ---------------------------------------------------------------------------

    def set_power_limit(self, *, index: int, watts: float) -> None:
        handle = self._handle(index)
        try:
            pynvml.nvmlDeviceSetPowerManagementLimit(handle, round(watts * 1000))
        except pynvml.NVMLError as exc:
            raise driver_error(exc, f"set GPU {index} power limit to {watts:g} W") from exc

    def reset(self, *, index: int, timeout_s: float, uuid: str | None = None) -> str:
        # NVML has no public reset call; nvidia-smi does it. An argument list, never a shell.
        # By UUID when known: the device that was checked is the one reset, whatever the order.
        target = uuid if uuid and _UUID.fullmatch(uuid) else str(index)
        argv = [self._nvidia_smi, "-r", "-i", target]
        try:
            done = self._run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
        except FileNotFoundError as exc:
            raise GpuDriverError(f"{self._nvidia_smi} not found on this node") from exc
        except subprocess.TimeoutExpired as exc:
            raise GpuDriverError(
                f"nvidia-smi -r -i {index} timed out after {timeout_s:g}s"
            ) from exc
        output = (done.stdout or "") + (done.stderr or "")
        if done.returncode != 0:
            last = next((ln for ln in reversed(output.splitlines()) if ln.strip()), "")
            raise GpuDriverError(
                f"nvidia-smi -r -i {index} exited {done.returncode}: {last.strip()}"
            )
        return output.strip()

    # -- XID events ------------------------------------------------------------------------

    def wait_xid(self, *, timeout_s: float) -> XidEvent | None:
        events = self._event_set()
        try:
            data = pynvml.nvmlEventSetWait(events, max(0, round(timeout_s * 1000)))
        except pynvml.NVMLError as exc:
            if int(getattr(exc, "value", -1)) == pynvml.NVML_ERROR_TIMEOUT:
                return None
            raise driver_error(exc, "waiting for XID events") from exc
        if not int(data.eventType) & pynvml.nvmlEventTypeXidCriticalError:
            return None
        index, uuid = -1, ""
        try:
            index = int(pynvml.nvmlDeviceGetIndex(data.device))
            uuid = str(pynvml.nvmlDeviceGetUUID(data.device))
        except pynvml.NVMLError:
            pass  # a lost GPU may not answer; the XID still matters
        return XidEvent(gpu=index, uuid=uuid, xid=int(data.eventData), at=datetime.now(UTC))

    def _event_set(self) -> Any:
        with self._events_lock:
            if self._events is None:
                try:
                    events = pynvml.nvmlEventSetCreate()
                except pynvml.NVMLError as exc:
                    raise driver_error(exc, "creating the NVML event set") from exc
                for index in range(self._count()):
                    try:
                        pynvml.nvmlDeviceRegisterEvents(
                            self._handle(index), pynvml.nvmlEventTypeXidCriticalError, events
                        )
                    except (pynvml.NVMLError, GpuDriverError):
                        continue  # not supported on this GPU, or lost: watch the others
                self._events = events
            return self._events


def _clock_event_reasons(handle: Any) -> int:
    try:
        return int(pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle))
    except pynvml.NVMLError_FunctionNotFound:  # drivers before 535 name it "throttle reasons"
        return int(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle))


def _retired_pages(handle: Any) -> int:
    causes = (
        pynvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
        pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
    )
    return sum(len(pynvml.nvmlDeviceGetRetiredPages(handle, c)) for c in causes)


def _ecc(handle: Any, r: _Reader) -> EccCounts:
    nv = pynvml

    def count(kind: int, counter: int) -> int:
        return int(nv.nvmlDeviceGetTotalEccErrors(handle, kind, counter))

    corrected, uncorrected = (
        nv.NVML_MEMORY_ERROR_TYPE_CORRECTED,
        nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
    )
    first = r.get("ecc", lambda: count(uncorrected, nv.NVML_VOLATILE_ECC))
    if first is None:  # consumer cards: no ECC at all; ask no more
        return EccCounts()
    return EccCounts(
        volatile_corrected=r.get("ecc", lambda: count(corrected, nv.NVML_VOLATILE_ECC)),
        volatile_uncorrected=first,
        aggregate_corrected=r.get("ecc", lambda: count(corrected, nv.NVML_AGGREGATE_ECC)),
        aggregate_uncorrected=r.get("ecc", lambda: count(uncorrected, nv.NVML_AGGREGATE_ECC)),
    )


def _condition(exc: GpuDriverError) -> GpuCondition:
    if exc.kind == "gpu_lost":
        return "lost"
    return "no_permission" if exc.kind == "no_permission" else "error"


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _int(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


def _watts(milliwatts: object) -> float | None:
    return None if milliwatts is None else int(milliwatts) / 1000  # type: ignore[call-overload]
