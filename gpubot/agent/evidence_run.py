"""Run one evidence tool as an argument list, bounded: its own deadline and byte cap, always.

The tool runs in a session of its own, so a timeout or a cap kills it and everything it
started (nvidia-bug-report.sh is a shell script with many children). Its output is read by a
thread while the caller waits on the deadline: a tool that hangs, prints gigabytes or dies
never holds the caller past the deadline and never costs more than the cap in memory.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from gpubot.domain.gpus.evidence import PartStatus

_CHUNK = 64 * 1024
_ERR_TAIL = 2048  # the last bytes of stderr kept, for the one line a failure says
_POLL_S = 0.05
_GRACE_S = 2.0  # after a kill: how long the readers may take to see the pipes close


@dataclass(frozen=True)
class Captured:
    status: PartStatus
    content: bytes
    detail: str
    seconds: float


def last_line(data: bytes, *, limit: int = 200) -> str:
    text = data.decode("utf-8", "replace")
    line = next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")
    return line[:limit]


class _Reader(threading.Thread):
    """Reads a pipe to its end: keeps up to `cap` bytes (of lines matching `keep`, when set),
    or only the last bytes (`tail`); calls `over` once when more than `cap` would be kept."""

    def __init__(
        self,
        pipe: IO[bytes],
        *,
        cap: int,
        keep: re.Pattern[bytes] | None = None,
        tail: bool = False,
        over: Callable[[], None] = lambda: None,
    ) -> None:
        super().__init__(daemon=True)  # a pipe held open by an escaped child never holds us
        self._pipe, self._cap, self._keep, self._tail, self._over = pipe, cap, keep, tail, over
        self.data = bytearray()
        self.overflowed = False

    def run(self) -> None:
        try:
            self._read()
        finally:
            # Here, not by the caller: closing a pipe another thread reads would wait on it.
            with contextlib.suppress(OSError):
                self._pipe.close()

    def _read(self) -> None:
        pending = b""
        with contextlib.suppress(OSError, ValueError):
            while chunk := self._pipe.read1(_CHUNK):  # type: ignore[attr-defined]
                if self._tail:
                    self.data = (self.data + chunk)[-self._cap :]
                    continue
                if self._keep is not None:
                    lines = (pending + chunk).split(b"\n")
                    pending = lines.pop()[: self._cap + 1]  # a line without end stays bounded
                    chunk = b"".join(ln + b"\n" for ln in lines if self._keep.search(ln))
                if not self._take(chunk):
                    return
            if pending and self._keep is not None and self._keep.search(pending):
                self._take(pending + b"\n")

    def _take(self, chunk: bytes) -> bool:
        room = self._cap - len(self.data)
        self.data += chunk[: max(room, 0)]
        if len(chunk) > room:
            self.overflowed = True
            self._over()
            return False
        return True


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def run_capped(
    argv: Sequence[str],
    *,
    timeout_s: float,
    max_bytes: int,
    keep: re.Pattern[bytes] | None = None,
    discard_stdout: bool = False,
    watch: Callable[[], int] | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    name: str = "",
) -> Captured:
    """Run `argv` (never a shell) for at most `timeout_s` seconds, keeping at most `max_bytes`
    of its stdout (only lines matching `keep`, when given). `discard_stdout`: its stdout is
    drained and dropped, and `watch()` (the size of what it writes elsewhere) is held to
    `max_bytes` instead. `name`: the tool, as details say it (default: argv[0]'s). Blocking:
    call it in a thread."""
    started = time.monotonic()
    deadline = started + timeout_s
    name = name or Path(argv[0]).name
    try:
        proc = subprocess.Popen(  # noqa: S603 - an argument list the agent built
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except FileNotFoundError:
        return Captured("missing", b"", f"{name} is not installed", 0.0)
    except OSError as exc:
        return Captured("failed", b"", f"could not start {name}: {exc.strerror}", 0.0)
    assert proc.stdout is not None
    assert proc.stderr is not None
    out = _Reader(
        proc.stdout,
        cap=_ERR_TAIL if discard_stdout else max_bytes,
        keep=keep,
        tail=discard_stdout,
        over=lambda: _kill(proc),
    )
    err = _Reader(proc.stderr, cap=_ERR_TAIL, tail=True)
    out.start()
    err.start()
    timed_out = grew = False
    while True:
        try:
            proc.wait(timeout=max(0.0, min(_POLL_S, deadline - time.monotonic())))
            break
        except subprocess.TimeoutExpired:
            if watch is not None and watch() > max_bytes:
                grew = True
            elif time.monotonic() < deadline:
                continue
            else:
                timed_out = True
            _kill(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=_GRACE_S)
            break
    out.join(timeout=max(_GRACE_S, deadline - time.monotonic()) if not timed_out else _GRACE_S)
    err.join(timeout=_GRACE_S)
    seconds = time.monotonic() - started
    content = b"" if discard_stdout else bytes(out.data[:max_bytes])
    if out.is_alive():
        # An escaped child still holds stdout open: what was read so far is all there is.
        timed_out = timed_out or not out.overflowed
    if out.overflowed or grew:
        return Captured("truncated", content, f"{name}: cut at {max_bytes} bytes", seconds)
    if timed_out:
        return Captured(
            "timed_out", content, f"{name} did not finish within {timeout_s:g}s; stopped", seconds
        )
    if proc.returncode != 0:
        said = last_line(bytes(err.data)) or last_line(bytes(out.data)) or "no message"
        return Captured("failed", content, f"{name} exited {proc.returncode}: {said}", seconds)
    return Captured("ok", content, f"{name}: {len(content)} bytes", seconds)
