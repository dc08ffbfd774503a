"""The node's kernel log between two instants, as journalctl prints it, for OOM triage."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

KERNEL_LOG_LINES = 5000  # the last lines of the window: an OOM report is a few dozen
KERNEL_LOG_TIMEOUT_S = 10.0
MAX_WINDOW_S = 6 * 3600  # a death is looked at within minutes of it, never a whole day


class KernelLogUnavailable(Exception):
    """journalctl could not be run or could not read the kernel's messages."""


def read_kernel_log(
    *, since: int, until: int, run: Callable[..., Any] = subprocess.run
) -> list[str]:
    """The kernel's lines from Unix second `since` to `until` (journalctl -k, ISO stamps), at
    most the last KERNEL_LOG_LINES; KernelLogUnavailable with one line why otherwise."""
    command = [
        "journalctl",
        "-k",
        "-q",
        "--no-pager",
        "-o",
        "short-iso",
        "--since",
        f"@{int(since)}",
        "--until",
        f"@{int(until)}",
        "-n",
        str(KERNEL_LOG_LINES),
    ]
    try:
        done = run(  # an argument list of integers the agent formatted itself
            command, capture_output=True, text=True, timeout=KERNEL_LOG_TIMEOUT_S, check=False
        )
    except FileNotFoundError as exc:
        raise KernelLogUnavailable("journalctl is not installed in the agent's image") from exc
    except subprocess.TimeoutExpired as exc:
        raise KernelLogUnavailable(f"journalctl took over {KERNEL_LOG_TIMEOUT_S:g} s") from exc
    if done.returncode != 0:
        why = (done.stderr or "").strip().splitlines()
        raise KernelLogUnavailable(f"journalctl failed: {why[0][:200] if why else done.returncode}")
    return list(done.stdout.splitlines()[-KERNEL_LOG_LINES:])
