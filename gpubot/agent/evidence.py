"""EvidenceGatherer: what a node says about its GPUs before a reset or reboot destroys it.

Three parts, each its own argument list with its own deadline and byte cap, run side by
side (the whole gathering takes as long as the slowest part, never longer than its limit):
`nvidia-bug-report.sh` where it is installed, `nvidia-smi -q -x` (XML), and the kernel's
NVRM and Xid lines since boot (`journalctl -k -b`, or `dmesg` where journald is absent).
A part that is not installed, hangs, prints too much or fails is said in its status
(missing, timed_out, truncated, failed) and the others still come back.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gpubot.agent.driver import GpuDriverError
from gpubot.agent.evidence_run import Captured, run_capped
from gpubot.domain.gpus.evidence import EvidencePart

MiB = 1024 * 1024
# The kernel lines kept: the NVIDIA driver's (NVRM, including every Xid) and the Xid lines.
KERNEL_LINES = re.compile(rb"NVRM|Xid|nvidia", re.IGNORECASE)
BUG_REPORT = "nvidia-bug-report.sh"
_FSIZE_SLACK = 64 * 1024


class Evidence(Protocol):
    """What gathers a node's evidence: EvidenceGatherer, or the simulated node's driver."""

    def gather(self) -> list[EvidencePart]:
        """Every part with its status; GpuDriverError (busy) while another gathering runs."""
        ...


@dataclass(frozen=True)
class PartLimits:
    timeout_s: float
    max_bytes: int


@dataclass(frozen=True)
class EvidenceLimits:
    """Each part's deadline and cap; the bot waits for the slowest plus a margin."""

    bug_report: PartLimits = PartLimits(240.0, 48 * MiB)
    smi: PartLimits = PartLimits(60.0, 8 * MiB)
    kernel: PartLimits = PartLimits(30.0, 4 * MiB)

    def slowest_s(self) -> float:
        return max(self.bug_report.timeout_s, self.smi.timeout_s, self.kernel.timeout_s)


class EvidenceGatherer:
    """Runs the tools found on `PATH` (the agent's, or `env`'s for tests). Blocking: the
    HTTP API calls it in a thread; one gathering per node at a time."""

    def __init__(
        self, *, limits: EvidenceLimits | None = None, env: dict[str, str] | None = None
    ) -> None:
        self.limits = limits or EvidenceLimits()
        self._env = env
        self._lock = threading.Lock()

    def _which(self, name: str) -> str | None:
        return shutil.which(name, path=(self._env or os.environ).get("PATH"))

    def gather(self) -> list[EvidencePart]:
        if not self._lock.acquire(blocking=False):
            raise GpuDriverError("evidence is already being gathered on this node", kind="busy")
        try:
            jobs: list[tuple[str, Callable[[], Captured]]] = [
                ("nvidia-bug-report.log.gz", self._bug_report),
                ("nvidia-smi-q.xml", self._smi),
                ("kernel-nvrm.log", self._kernel),
            ]
            with ThreadPoolExecutor(len(jobs), thread_name_prefix="gpubot-evidence") as pool:
                futures = [(name, pool.submit(job)) for name, job in jobs]
                return [
                    EvidencePart(name, c.status, c.content, c.detail, c.seconds)
                    for name, c in ((n, f.result()) for n, f in futures)
                ]
        finally:
            self._lock.release()

    def _smi(self) -> Captured:
        found = self._which("nvidia-smi")
        if found is None:
            return Captured("missing", b"", "nvidia-smi is not installed (not on PATH)", 0.0)
        limit = self.limits.smi
        return run_capped(
            [found, "-q", "-x"], timeout_s=limit.timeout_s, max_bytes=limit.max_bytes, env=self._env
        )

    def _kernel(self) -> Captured:
        """journalctl's kernel log since boot; dmesg where journalctl is missing or fails (a
        container without the host's journal), within the one deadline."""
        limit = self.limits.kernel
        started = time.monotonic()
        tried: Captured | None = None
        for argv in (
            ["journalctl", "-k", "-b", "--no-pager", "-o", "short-iso"],
            ["dmesg", "--ctime"],
        ):
            found = self._which(argv[0])
            left = limit.timeout_s - (time.monotonic() - started)
            if found is None or left <= 0:
                continue
            ran = run_capped(
                [found, *argv[1:]],
                timeout_s=left,
                max_bytes=limit.max_bytes,
                keep=KERNEL_LINES,
                env=self._env,
            )
            if ran.status != "failed":
                return ran
            tried = ran
        if tried is not None:
            return tried
        return Captured("missing", b"", "neither journalctl nor dmesg is installed", 0.0)

    def _bug_report(self) -> Captured:
        found = self._which(BUG_REPORT)
        if found is None:
            return Captured("missing", b"", f"{BUG_REPORT} is not installed (not on PATH)", 0.0)
        limit = self.limits.bug_report
        with tempfile.TemporaryDirectory(prefix="gpubot-bug-report-") as tmp:
            where = Path(tmp)

            def written() -> int:
                total = 0
                for f in where.iterdir():
                    with contextlib.suppress(OSError):  # a file that came and went
                        total += f.stat().st_size
                return total

            argv = [found, "--output-file", str(where / "nvidia-bug-report.log")]
            if (prlimit := self._which("prlimit")) is not None:
                # The kernel holds every file it writes to the cap (and a little over, so an
                # overflow reads as one), where watching the folder alone would let a runaway
                # write on until the next look.
                argv = [prlimit, f"--fsize={limit.max_bytes + _FSIZE_SLACK}", "--", *argv]
            ran = run_capped(
                argv,
                timeout_s=limit.timeout_s,
                max_bytes=limit.max_bytes,
                discard_stdout=True,
                watch=written,
                cwd=where,
                env=self._env,
                name=BUG_REPORT,
            )
            # It appends .gz to the name it is given; an older one may leave it uncompressed.
            report = where / "nvidia-bug-report.log.gz"
            plain = where / "nvidia-bug-report.log"
            if not report.is_file() and not plain.is_file():
                status = "failed" if ran.status == "ok" else ran.status
                return Captured(status, b"", f"{ran.detail}; it wrote no report", ran.seconds)
            with (report if report.is_file() else plain).open("rb") as f:
                content = f.read(limit.max_bytes + 1)
            if not report.is_file():
                content = gzip.compress(content[: limit.max_bytes], mtime=0)
        if len(content) > limit.max_bytes:
            detail = f"{BUG_REPORT}: report cut at {limit.max_bytes} bytes"
            return Captured("truncated", content[: limit.max_bytes], detail, ran.seconds)
        detail = f"{BUG_REPORT}: {len(content)} bytes" if ran.status == "ok" else ran.detail
        return Captured(ran.status, content, detail, ran.seconds)
