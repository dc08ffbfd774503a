"""DcgmDiagnostics: runs `dcgmi diag -r LEVEL -j` on this node and reads its answer.

An argument list, never a shell; the level and the GPU indexes are checked before anything
runs. What goes wrong comes back as one GpuDriverError line whose kind tells the cases apart:
dcgmi not installed, the DCGM host engine (nv-hostengine) not running, a timeout, output
that is not DCGM's JSON.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from gpubot.agent.driver import GpuDriverError
from gpubot.knowledge.dcgm_diag import (
    DIAG_TIMEOUT_S,
    LEVELS,
    DiagParseError,
    DiagReport,
    cap,
    parse_diag,
)

# Where dcgmi looks for nv-hostengine without --host.
DEFAULT_HOSTENGINE = "127.0.0.1:5555"
# What dcgmi prints when it cannot reach nv-hostengine (DCGM's standalone mode).
_HOSTENGINE_DOWN = (
    "unable to establish a connection to the specified host",
    "unable to connect to host engine",
    "host engine connection invalid",
)


class Diagnostics(Protocol):
    """DCGM diagnostics on this node's GPUs. Blocking: the agent calls it in a thread."""

    def diagnose(self, *, level: int, gpus: Sequence[int]) -> DiagReport:
        """Run level `level` (1..3) on `gpus` (empty: every GPU); GpuDriverError otherwise."""
        ...

    def status(self) -> str | None:
        """None when diagnostics can run now; else one line why not. Cheap (no test runs)."""
        ...


def check_level(level: int) -> int:
    if isinstance(level, bool) or not isinstance(level, int) or level not in LEVELS:
        raise GpuDriverError(
            f"diagnostic level must be 1, 2 or 3, not {str(level)[:10]!r}",
            kind="invalid_argument",
        )
    return level


def check_gpus(gpus: Sequence[int]) -> tuple[int, ...]:
    for g in gpus:
        if isinstance(g, bool) or not isinstance(g, int) or not 0 <= g <= 63:
            raise GpuDriverError(
                f"GPU index {str(g)[:10]!r} is not an integer 0-63", kind="invalid_argument"
            )
    return tuple(sorted(set(gpus)))


class DcgmDiagnostics:
    """`dcgmi` from PATH, or at `path` when configured."""

    def __init__(
        self,
        *,
        path: str | None = None,
        timeout_s: float | None = None,
        env: dict[str, str] | None = None,
        host: str | None = None,
    ) -> None:
        self._path = path
        # nv-hostengine elsewhere than dcgmi's default (localhost:5555), e.g. the GPU
        # Operator's nvidia-dcgm DaemonSet at the node's own address: `dcgmi --host`.
        self._host = host
        self._timeout_s = timeout_s  # None: DIAG_TIMEOUT_S by level
        self._env = env  # for tests; None: the agent's environment

    def dcgmi(self) -> str:
        """The dcgmi executable, or GpuDriverError(dcgm_missing) saying where it looked."""
        if self._path:
            path = Path(self._path)
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
            raise GpuDriverError(
                f"dcgmi is not installed at {self._path} (agent.dcgmi_path): install DCGM "
                "(datacenter-gpu-manager) in the agent's image",
                kind="dcgm_missing",
            )
        search = (self._env or os.environ).get("PATH")
        found = shutil.which("dcgmi", path=search)
        if found is None:
            raise GpuDriverError(
                "dcgmi is not installed (not on the agent's PATH): install DCGM "
                "(datacenter-gpu-manager) in the agent's image, or set agent.dcgmi_path",
                kind="dcgm_missing",
            )
        return found

    def status(self) -> str | None:
        """dcgmi is there and the host engine accepts a connection (a TCP connect within a
        second to --host, or dcgmi's default 127.0.0.1:5555); else why not."""
        try:
            self.dcgmi()
        except GpuDriverError as exc:
            return str(exc)
        host, _, port = (self._host or DEFAULT_HOSTENGINE).rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=1.0):
                return None
        except (OSError, ValueError) as exc:
            return (
                f"the DCGM host engine at {self._host or DEFAULT_HOSTENGINE} does not answer "
                f"({exc.__class__.__name__}): run nv-hostengine, or point agent.dcgm_host at "
                "the GPU Operator's (the node's address, port 5555)"
            )

    def diagnose(self, *, level: int, gpus: Sequence[int]) -> DiagReport:
        level = check_level(level)
        chosen = check_gpus(gpus)
        argv = [self.dcgmi(), "diag", "-r", str(level), "-j"]
        if self._host:
            argv += ["--host", self._host]
        if chosen:
            argv += ["-i", ",".join(str(g) for g in chosen)]
        timeout = self._timeout_s or DIAG_TIMEOUT_S[level]
        try:
            done = subprocess.run(  # noqa: S603 - an argument list of checked values
                argv,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
                check=False,
                env=self._env,
            )
        except subprocess.TimeoutExpired as exc:
            raise GpuDriverError(
                f"dcgmi diag -r {level} did not finish within {timeout:g}s; stopped it",
                kind="timeout",
            ) from exc
        except OSError as exc:
            raise GpuDriverError(f"could not start dcgmi: {exc}", kind="dcgm_missing") from exc
        output = (done.stdout or "") + "\n" + (done.stderr or "")
        lowered = output.lower()
        if done.returncode != 0 and any(s in lowered for s in _HOSTENGINE_DOWN):
            said = next(
                ln.strip()
                for ln in output.splitlines()
                if any(s in ln.lower() for s in _HOSTENGINE_DOWN)
            )
            raise GpuDriverError(
                "the DCGM host engine (nv-hostengine) is not running or not reachable; "
                f"dcgmi said: {cap(said, 160)}",
                kind="hostengine_down",
            )
        # dcgmi exits non-zero when a test fails, with the JSON on stdout all the same.
        try:
            return parse_diag(done.stdout or "", level=level, gpus=chosen)
        except DiagParseError as exc:
            last = next((ln for ln in reversed(output.splitlines()) if ln.strip()), "")
            raise GpuDriverError(
                f"dcgmi diag -r {level} exited {done.returncode} with output gpubot cannot "
                f"read ({exc}); last line: {cap(last, 120)}",
                kind="unparseable",
            ) from exc
