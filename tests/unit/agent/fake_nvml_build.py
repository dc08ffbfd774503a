"""Builds the fake libnvidia-ml.so.1 (tests/fixtures/fake_nvml) and runs NVML code against it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SOURCE = Path(__file__).parents[2] / "fixtures" / "fake_nvml" / "fake_nvml.c"


def build_fake_nvml(directory: Path) -> Path:
    """Compile the fake library into `directory`; skip without gcc (fail under CI=true)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        if os.environ.get("CI") == "true":
            pytest.fail("gcc is needed to build the fake libnvidia-ml.so.1 (CI=true)")
        pytest.skip("gcc not found: cannot build the fake libnvidia-ml.so.1")
    directory.mkdir(parents=True, exist_ok=True)
    lib = directory / "libnvidia-ml.so.1"
    subprocess.run(
        [gcc, "-shared", "-fPIC", "-O1", "-Wall", "-o", str(lib), str(SOURCE)],
        check=True,
        capture_output=True,
        text=True,
    )
    return directory


def run_with_fake_nvml(
    lib_dir: Path, code: str, *, mode: str = "datacenter", extra_env: dict[str, str] | None = None
) -> Any:
    """Run `code` in a fresh Python whose pynvml loads the fake library; return its JSON."""
    env = {
        **os.environ,
        "LD_LIBRARY_PATH": str(lib_dir),
        "FAKE_NVML_MODE": mode,
        **(extra_env or {}),
    }
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
