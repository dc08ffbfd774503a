"""Run one Slurm command as an argument list (never a shell), with a timeout and SLURM_CONF."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpubot.errors import NotFoundError, PermanentStepError, TemporaryStepError

log = logging.getLogger(__name__)

# What the commands print when slurmctld cannot be reached: asking again later may work.
_UNREACHABLE = re.compile(
    r"Unable to contact slurm controller|Socket timed out|Connection refused|"
    r"Zero Bytes were transmitted|Communication connection failure|"
    r"Munge encode failed|Slurm backup controller in standby mode",
    re.IGNORECASE,
)
_INVALID_JOB = re.compile(r"Invalid job id specified", re.IGNORECASE)
_INVALID_NODE = re.compile(r"Invalid node name specified|Node .* not found", re.IGNORECASE)
_OUTPUT_CAP = 64 * 1024 * 1024  # a fleet's squeue --json stays far below this


@dataclass(frozen=True)
class SlurmCommands:
    """Where the Slurm commands are and how they reach the controller (from config only).

    `conf`: the slurm.conf the commands read (SLURM_CONF); None: the host's default.
    `bin_dir`: the folder of scontrol, sinfo, squeue, sacct, scancel; None: PATH.
    """

    conf: Path | None = None
    bin_dir: Path | None = None
    timeout_seconds: float = 30.0

    def _argv(self, command: str, args: Sequence[str]) -> list[str]:
        binary = str(self.bin_dir / command) if self.bin_dir is not None else command
        return [binary, *args]

    def _env(self) -> Mapping[str, str]:
        env = dict(os.environ)
        if self.conf is not None:
            env["SLURM_CONF"] = str(self.conf)
        # The commands print dates and numbers for people; ours are read as data.
        env["LC_ALL"] = "C"
        return env

    async def run(self, command: str, *args: str) -> str:
        """stdout of `command args…`; a failure becomes one line naming the command."""
        argv = self._argv(command, args)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=dict(self._env()),
            )
        except FileNotFoundError as exc:
            raise PermanentStepError(
                f"{argv[0]} is not installed on this host (slurm-client; or set slurm.bin_dir)"
            ) from exc
        except OSError as exc:
            raise PermanentStepError(f"{argv[0]} could not start: {exc}") from exc
        try:
            out, err = await asyncio.wait_for(proc.communicate(), self.timeout_seconds)
        except TimeoutError as exc:
            proc.kill()
            await proc.wait()
            raise TemporaryStepError(
                f"{command} {' '.join(args[:2])} did not answer in {self.timeout_seconds:g}s",
                delay=5.0,
            ) from exc
        if len(out) > _OUTPUT_CAP:
            raise PermanentStepError(f"{command} printed more than {_OUTPUT_CAP} bytes")
        text = err.decode("utf-8", "replace").strip()
        if proc.returncode != 0:
            line = " ".join(text.split())[:300] or f"exit status {proc.returncode}"
            what = f"{command} {' '.join(args[:3])}"
            if _UNREACHABLE.search(text):
                raise TemporaryStepError(f"{what}: {line}", delay=5.0)
            if _INVALID_JOB.search(text) or _INVALID_NODE.search(text):
                raise NotFoundError(f"{what}: {line}")
            raise PermanentStepError(f"{what}: {line}")
        return out.decode("utf-8", "replace")

    async def run_json(self, command: str, *args: str) -> dict[str, Any]:
        """`command args… --json`, parsed; Slurm's own `errors` list becomes one line."""
        text = await self.run(command, *args, "--json")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PermanentStepError(f"{command} --json printed no JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise PermanentStepError(
                f"{command} --json printed {type(data).__name__}, not an object"
            )
        errors = data.get("errors") or []
        if isinstance(errors, list) and errors:
            first = errors[0]
            detail = first.get("error", first) if isinstance(first, dict) else first
            raise PermanentStepError(f"{command} --json: {str(detail)[:300]}")
        return data
