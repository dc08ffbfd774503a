"""Waiting for what a test does not control: a process that starts, a server that answers,
a condition another thread or event loop brings about.

A busy machine makes all of these slow, not wrong, so a wait polls for its condition and
gives up only after `LIMIT_S`; a process that exits while it is waited for fails the wait at
once, with the end of its output. Time rules (backoff, renewal, expiry) are not waited for:
their tests run on gpubot.clock.FakeClock.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

# The least any test waits for a process or a server: a start on a loaded machine.
LIMIT_S = 60.0
Output = Path | Callable[[], str] | None


def wait_until(
    check: Callable[[], bool],
    what: str,
    *,
    proc: subprocess.Popen[bytes] | subprocess.Popen[str] | None = None,
    output: Output = None,
    limit: float = LIMIT_S,
) -> None:
    """Poll `check` until it holds. `proc`: the process that should bring it about; if it
    exits first the wait fails at once, quoting `output` (its log file, or a function that
    reads it) or, when its output is a pipe, what it wrote."""
    deadline = time.monotonic() + limit
    while True:
        if check():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(_exited(proc, what, output))
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {limit:g} s for {what}{_tail(proc, output)}")
        time.sleep(0.05)


async def eventually(
    check: Callable[[], bool | Awaitable[bool]], what: str, *, limit: float = LIMIT_S
) -> None:
    """The same inside an event loop: `check` may be a coroutine function."""
    deadline = time.monotonic() + limit
    while True:
        held = check()
        if isinstance(held, Awaitable):
            held = await held
        if held:
            return
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {limit:g} s for {what}")
        await asyncio.sleep(0.02)


def answers(url: str) -> bool:
    """True when `url` answers 200 now (a refused or slow connection is not an answer yet)."""
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def _exited(
    proc: subprocess.Popen[bytes] | subprocess.Popen[str], what: str, output: Output
) -> str:
    return f"the process exited ({proc.returncode}) before {what}{_tail(proc, output)}"


def _tail(proc: subprocess.Popen[bytes] | subprocess.Popen[str] | None, output: Output) -> str:
    text = ""
    if isinstance(output, Path):
        text = output.read_text(errors="replace") if output.exists() else ""
    elif output is not None:
        text = output()
    elif proc is not None and proc.poll() is not None:
        for stream in (proc.stdout, proc.stderr):
            out = stream.read() if stream is not None else ""
            text += out.decode(errors="replace") if isinstance(out, bytes) else out
    return f"; its output ends:\n{text[-3000:]}" if text else ""
