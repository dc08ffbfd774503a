"""Commands that need no cluster import no adapter library, so they start fast."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
HEAVY = (
    "kubernetes",
    "sqlalchemy",
    "slack_bolt",
    "slack_sdk",
    "prometheus_client",
    "starlette",
    "uvicorn",
    "matplotlib",
    "apscheduler",
    "pynvml",
    "httpx",
    "aiohttp",
    "psycopg",
)

# Runs the command in a fresh interpreter, then prints the heavy modules it imported.
PROBE = """
import sys
from gpubot.cli import run
try:
    run(sys.argv[1:])
except SystemExit:
    pass
print("imported:", *(m for m in {heavy!r} if m in sys.modules))
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--version"],
        ["xid", "explain", "79"],
        ["triage", "oom", "--log", "LOG"],
        ["runbooks", "validate", "runbooks"],
    ],
    ids=["help", "version", "xid", "triage", "runbooks-validate"],
)
def test_light_command_imports_no_adapter_library(argv: list[str], tmp_path: Path) -> None:
    """--help, --version, xid, triage and runbooks validate load none of the vendor clients
    (Kubernetes, SQLAlchemy, Slack, Prometheus, web server, charts, scheduler, NVML, HTTP)."""
    log = tmp_path / "oom.log"
    log.write_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    argv = [str(log) if a == "LOG" else a for a in argv]
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    imported = done.stdout.splitlines()[-1]
    assert imported == "imported:", f"{' '.join(argv)} {imported}"
