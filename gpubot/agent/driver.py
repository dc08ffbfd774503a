"""GpuDriver: what the node agent reads from and does to its node's GPUs (NVML or simulated)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from gpubot.errors import GpubotError

# Why a read or an action failed, in words an operator can act on.
DriverErrorKind = Literal[
    "library_not_found",  # libnvidia-ml.so.1 is not on the node (no driver installed)
    "driver_not_loaded",  # the kernel module is not loaded
    "no_permission",  # NVML refused: the agent needs root or CAP_SYS_ADMIN for this
    "not_supported",  # this GPU or driver does not have the feature
    "gpu_lost",  # NVML_ERROR_GPU_IS_LOST: fallen off the bus (what XID 79 looks like)
    "not_found",  # no GPU with that index
    "invalid_argument",
    "in_use",  # a process holds the GPU (reset refused)
    "out_of_range",  # a power limit outside the device's min/max
    "busy",  # a reset of that GPU is already under way
    "uuid_mismatch",  # the GPU at that index is not the one the caller named
    "dcgm_missing",  # dcgmi is not installed where the agent looks
    "hostengine_down",  # dcgmi cannot reach the DCGM host engine (nv-hostengine)
    "timeout",  # dcgmi diag ran past its time limit and was stopped
    "unparseable",  # dcgmi printed something that is not DCGM's diagnostic JSON
    "failed",  # anything else NVML or nvidia-smi reports
]
GpuCondition = Literal["ok", "lost", "no_permission", "error"]


class GpuDriverError(GpubotError):
    """NVML (or the simulated driver) could not do what was asked; `kind` says why."""

    def __init__(self, message: str, *, kind: DriverErrorKind = "failed") -> None:
        super().__init__(message)
        self.kind: DriverErrorKind = kind


@dataclass(frozen=True)
class SystemInfo:
    driver_version: str | None
    cuda_driver_version: str | None  # "12.4", from nvmlSystemGetCudaDriverVersion
    gpu_count: int


@dataclass(frozen=True)
class EccCounts:
    volatile_corrected: int | None = None
    volatile_uncorrected: int | None = None
    aggregate_corrected: int | None = None
    aggregate_uncorrected: int | None = None


@dataclass(frozen=True)
class GpuReport:
    """One GPU: inventory and telemetry. A field NVML does not support is None and named
    in `unsupported`; a GPU that cannot be read at all has `condition` and `error` set."""

    index: int
    uuid: str | None = None
    name: str | None = None
    pci_bus_id: str | None = None
    memory_total_mib: int | None = None
    mig_mode: Literal["enabled", "disabled"] | None = None
    temperature_c: int | None = None
    power_draw_w: float | None = None
    power_limit_w: float | None = None
    power_min_w: float | None = None
    power_max_w: float | None = None
    power_default_w: float | None = None
    utilization_pct: int | None = None
    memory_used_mib: int | None = None
    sm_clock_mhz: int | None = None
    throttle_reasons: tuple[str, ...] | None = None
    ecc: EccCounts = field(default_factory=EccCounts)
    retired_pages: int | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failed: bool | None = None
    xid_errors: tuple[int, ...] = ()
    condition: GpuCondition = "ok"
    error: str = ""
    unsupported: tuple[str, ...] = ()

    @property
    def lost(self) -> bool:
        return self.condition == "lost"

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["throttle_reasons"] = (
            list(self.throttle_reasons) if self.throttle_reasons is not None else None
        )
        data["xid_errors"] = list(self.xid_errors)
        data["unsupported"] = list(self.unsupported)
        return data


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    used_memory_mib: int | None  # None where the driver cannot tell (WDDM, some MIG setups)
    name: str = ""


@dataclass(frozen=True)
class XidEvent:
    gpu: int
    uuid: str
    xid: int
    at: datetime


class GpuDriver(Protocol):
    """Reads and actions on this node's GPUs. Blocking: the agent calls it in a thread."""

    def system(self) -> SystemInfo: ...

    def gpus(self) -> list[GpuReport]: ...

    def processes(self, *, index: int) -> list[GpuProcess]: ...

    def set_power_limit(self, *, index: int, watts: float) -> None:
        """Set the limit; GpuDriverError (not_supported, no_permission, …) when NVML refuses."""
        ...

    def reset(self, *, index: int, timeout_s: float, uuid: str | None = None) -> str:
        """Reset one GPU (`nvidia-smi -r`), addressed by `uuid` when given, else by index;
        returns the tool's output."""
        ...


class XidSource(Protocol):
    """Critical XID events as NVML's event set reports them."""

    def wait_xid(self, *, timeout_s: float) -> XidEvent | None:
        """The next critical XID event, or None after `timeout_s` without one."""
        ...


class AgentDriver(GpuDriver, XidSource, Protocol):
    """What the agent runs on: GPU reads and actions, and the XID events it forwards."""


# NVML's clocks-event (throttle) reason bits, named as nvidia-smi names them.
THROTTLE_REASONS: tuple[tuple[int, str], ...] = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)
THERMAL_REASONS = frozenset({"sw_thermal_slowdown", "hw_thermal_slowdown"})
POWER_REASONS = frozenset({"sw_power_cap", "hw_power_brake_slowdown"})


def throttle_names(mask: int) -> tuple[str, ...]:
    return tuple(name for bit, name in THROTTLE_REASONS if mask & bit)
