"""NvmlDriver on the real pynvml bindings against a fake libnvidia-ml.so.1 built from C."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fake_nvml_build import build_fake_nvml, run_with_fake_nvml

READ_ALL = """
import json
from gpubot.agent.driver import GpuDriverError
from gpubot.agent.nvml import NvmlDriver
try:
    d = NvmlDriver()
except GpuDriverError as exc:
    print(json.dumps({"init_error": {"kind": exc.kind, "message": str(exc)}}))
    raise SystemExit(0)
out = {
    "system": d.system().__dict__,
    "gpus": [g.as_json() for g in d.gpus()],
    "procs": {g: [p.__dict__ for p in d.processes(index=g)] for g in range(d.system().gpu_count)
              if d.gpus()[g].condition == "ok"},
}
d.close()
print(json.dumps(out))
"""

SET_POWER = """
import json
from gpubot.agent.driver import GpuDriverError
from gpubot.agent.nvml import NvmlDriver
d = NvmlDriver()
result = {}
try:
    d.set_power_limit(index=0, watts=WATTS)
    result["limit"] = d.gpus()[0].power_limit_w
except GpuDriverError as exc:
    result["error"] = {"kind": exc.kind, "message": str(exc)}
print(json.dumps(result))
"""

WAIT_XID = """
import json
from gpubot.agent.nvml import NvmlDriver
d = NvmlDriver()
first = d.wait_xid(timeout_s=0.1)
second = d.wait_xid(timeout_s=0.1)
print(json.dumps({"first": [first.gpu, first.uuid, first.xid] if first else None,
                  "second": second is None}))
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fake_nvml(tmp_path_factory.mktemp("fake-nvml"))


def _read(lib: Path, mode: str) -> Any:
    return run_with_fake_nvml(lib, READ_ALL, mode=mode)


def test_datacenter_gpus_read_everything(lib: Path) -> None:
    out = _read(lib, "datacenter")
    assert out["system"] == {
        "driver_version": "550.54.15",
        "cuda_driver_version": "12.4",
        "gpu_count": 2,
    }
    hot, busy = out["gpus"]
    assert hot["uuid"] == "GPU-11111111-2222-4333-8444-555555555550"
    assert hot["name"] == "NVIDIA H100 80GB HBM3"
    assert hot["pci_bus_id"] == "00000000:18:00.0"
    assert hot["memory_total_mib"] == 80 * 1024
    assert hot["mig_mode"] == "disabled"
    assert hot["temperature_c"] == 91
    assert hot["power_draw_w"] == 699.0
    assert (hot["power_limit_w"], hot["power_min_w"], hot["power_max_w"]) == (700, 200, 700)
    assert hot["power_default_w"] == 700.0
    assert hot["utilization_pct"] == 98
    assert hot["sm_clock_mhz"] == 1980
    assert hot["throttle_reasons"] == ["sw_power_cap", "sw_thermal_slowdown"]
    assert hot["ecc"] == {
        "volatile_corrected": 3,
        "volatile_uncorrected": 0,
        "aggregate_corrected": 12,
        "aggregate_uncorrected": 0,
    }
    # H100: row remapping, not page retirement.
    assert hot["retired_pages"] is None
    assert hot["unsupported"] == ["retired_pages"]
    assert (hot["remapped_rows_pending"], hot["remapped_rows_failed"]) == (False, False)
    assert hot["condition"] == "ok"
    assert busy["memory_used_mib"] == 70 * 1024
    assert out["procs"] == {
        "0": [],
        "1": [{"pid": 4242, "used_memory_mib": 70 * 1024, "name": ""}],
    }


def test_consumer_card_reports_unsupported_fields_as_none(lib: Path) -> None:
    out = _read(lib, "consumer")
    (gpu,) = out["gpus"]
    assert gpu["name"] == "NVIDIA GeForce RTX 4090"
    assert gpu["ecc"] == {
        "volatile_corrected": None,
        "volatile_uncorrected": None,
        "aggregate_corrected": None,
        "aggregate_uncorrected": None,
    }
    assert gpu["mig_mode"] is None
    assert set(gpu["unsupported"]) == {"mig_mode", "remapped_rows", "retired_pages", "ecc"}
    assert gpu["condition"] == "ok"
    assert gpu["temperature_c"] == 61  # the rest still reads


def test_lost_gpu_is_reported_not_raised(lib: Path) -> None:
    out = _read(lib, "lost")
    ok, lost = out["gpus"]
    assert ok["condition"] == "ok"
    assert lost["condition"] == "lost"
    assert "fallen off the bus" in lost["error"]
    assert lost["temperature_c"] is None
    assert "1" not in out["procs"]


def test_driver_not_loaded_is_a_clear_state(lib: Path) -> None:
    out = _read(lib, "nodriver")
    assert out["init_error"]["kind"] == "driver_not_loaded"
    assert "kernel module is not loaded" in out["init_error"]["message"]


def test_library_not_found_is_a_clear_state(lib: Path, tmp_path: Path) -> None:
    # An empty directory first on the path: pynvml's dlopen finds no libnvidia-ml.so.1.
    out = run_with_fake_nvml(tmp_path, READ_ALL)
    assert out["init_error"]["kind"] == "library_not_found"
    assert "libnvidia-ml.so.1" in out["init_error"]["message"]


def test_set_power_limit_goes_through_nvml(lib: Path) -> None:
    out = run_with_fake_nvml(lib, SET_POWER.replace("WATTS", "455.0"))
    assert out == {"limit": 455.0}


def test_set_power_limit_without_permission(lib: Path) -> None:
    out = run_with_fake_nvml(lib, SET_POWER.replace("WATTS", "300.0"), mode="consumer")
    assert out["error"]["kind"] == "no_permission"
    assert "root" in out["error"]["message"]


def test_xid_events_through_the_event_set(lib: Path) -> None:
    out = run_with_fake_nvml(lib, WAIT_XID, extra_env={"FAKE_NVML_XID": "79"})
    assert out == {
        "first": [0, "GPU-11111111-2222-4333-8444-555555555550", 79],
        "second": True,
    }
