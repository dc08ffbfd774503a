"""scripts/gpu_smoke.py against the fake libnvidia-ml.so.1: reads everything, changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_nvml_build import build_fake_nvml

SCRIPT = Path(__file__).parents[3] / "scripts" / "gpu_smoke.py"


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fake_nvml(tmp_path_factory.mktemp("fake-nvml-smoke"))


def _smoke(lib: Path, mode: str, *args: str) -> tuple[int, dict[str, object]]:
    env = {**os.environ, "LD_LIBRARY_PATH": str(lib), "FAKE_NVML_MODE": mode, "FAKE_NVML_XID": "79"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60
    )
    return done.returncode, json.loads(done.stdout)


def test_smoke_reads_inventory_telemetry_processes_and_xid(lib: Path) -> None:
    code, out = _smoke(lib, "datacenter", "--xid-wait", "0.1")
    assert code == 0
    assert out["system"] == {
        "driver_version": "550.54.15",
        "cuda_driver_version": "12.4",
        "gpu_count": 2,
    }
    gpus = out["gpus"]
    assert isinstance(gpus, list)
    assert [g["power_limit_w"] for g in gpus] == [700.0, 700.0]
    assert out["processes"] == {"0": [], "1": [{"pid": 4242, "used_memory_mib": 71680, "name": ""}]}
    assert out["xid_event"]["xid"] == 79  # type: ignore[index]


def test_smoke_on_a_lost_gpu_and_without_a_driver(lib: Path) -> None:
    code, out = _smoke(lib, "lost")
    assert code == 0
    assert [g["condition"] for g in out["gpus"]] == ["ok", "lost"]  # type: ignore[attr-defined]
    assert out["processes"]["1"]["kind"] == "gpu_lost"  # type: ignore[index]
    code, out = _smoke(lib, "nodriver")
    assert code == 1
    assert out["kind"] == "driver_not_loaded"


def test_smoke_calls_no_setter() -> None:
    text = SCRIPT.read_text()
    for forbidden in ("set_power_limit", "reset(", "nvmlDeviceSet", "nvidia-smi -r"):
        assert forbidden not in text.split('"""', 2)[2]  # the code, not the docstring
