"""A Slurm job's output file (--output), read only under the folders the config names."""

from __future__ import annotations

import asyncio
import os
import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from gpubot.backends.slurm.models import SlurmJob
from gpubot.errors import NotFoundError

_PATTERN = re.compile(r"%(%|[0-9]*[jJuxAaNsnt])")
_READ_CAP = 8 * 1024 * 1024  # the tail is read from at most the file's last 8 MiB


def output_path(job: SlurmJob) -> Path | None:
    """Where Slurm wrote the job's stdout: --output with its %-patterns filled in, or the
    default slurm-%j.out (slurm-%A_%a.out for an array task) in the job's working folder.
    None where the pattern needs what is not known here (%s step, %t task, %n node index)."""
    pattern = job.standard_output or (
        "slurm-%A_%a.out" if job.array_task_id is not None else "slurm-%j.out"
    )
    nodes = job.node_names
    values = {
        "j": str(job.job_id),
        "J": str(job.job_id),
        "u": job.user_name,
        "x": job.name,
        "A": str(job.array_job_id or job.job_id),
        "a": str(job.array_task_id if job.array_task_id is not None else 4294967294),
        "N": nodes[0] if nodes else "",
    }
    unknown = False

    def fill(match: re.Match[str]) -> str:
        nonlocal unknown
        spec = match.group(1)
        if spec == "%":
            return "%"
        width, key = spec[:-1], spec[-1]
        if key not in values or (key == "N" and not values["N"]):
            unknown = True
            return ""
        value = values[key]
        return value.zfill(int(width)) if width and value.isdigit() else value

    text = _PATTERN.sub(fill, pattern)
    if unknown or not text:
        return None
    path = Path(text)
    if not path.is_absolute():
        if not job.current_working_directory:
            return None
        path = Path(job.current_working_directory) / path
    return path


@dataclass(frozen=True)
class JobOutput:
    """Reads a job's output only where it lies under one of `roots` after resolving links:
    the path comes from the job's own --output, which its user chose, so a job writing to
    /etc/shadow must not make the bot read and post that file."""

    roots: tuple[Path, ...]

    def allowed(self, path: Path) -> Path | None:
        resolved = Path(os.path.realpath(path))
        for root in self.roots:
            base = Path(os.path.realpath(root))
            if resolved.is_relative_to(base):
                return resolved
        return None

    async def tail(self, job: SlurmJob, *, lines: int) -> str:
        path = output_path(job)
        if path is None:
            raise NotFoundError(
                f"Slurm job {job.job_ref}: its output file name cannot be known here"
            )
        where = self.allowed(path)
        if where is None:
            raise NotFoundError(
                f"Slurm job {job.job_ref} writes {path}, which is not under slurm.output_roots; "
                "not read"
            )
        return await asyncio.to_thread(_tail, where, max(1, min(lines, 10_000)))


def _tail(path: Path, lines: int) -> str:
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - _READ_CAP))
            data = f.read(_READ_CAP)
    except FileNotFoundError as exc:
        raise NotFoundError(f"{path} does not exist (yet)") from exc
    except OSError as exc:
        raise NotFoundError(f"{path} cannot be read: {exc.strerror}") from exc
    kept = deque(data.decode("utf-8", "replace").splitlines(), maxlen=lines)
    return "\n".join(kept)
