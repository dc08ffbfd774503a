"""What `sinfo --json` and `squeue --json` print (Slurm 22.05: openapi v0.0.38), parsed."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

# Slurm 22.05 prints a few numbers as {"set": …, "number": …} in later data parsers and as
# bare numbers here; both read as an int (0 when unset).


def _number(value: Any) -> Any:
    if isinstance(value, dict):
        return value.get("number", 0) if value.get("set", True) else 0
    return 0 if value is None else value


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class SlurmNode(_Model):
    name: str
    state: str = ""  # base state, lower case in 22.05: idle, allocated, mixed, down, …
    state_flags: tuple[str, ...] = ()  # DRAIN, COMPLETING, NOT_RESPONDING, REBOOT_REQUESTED, …
    reason: str = ""
    reason_set_by_user: str | None = None
    reason_changed_at: int = 0
    gres: str = ""
    gres_used: str = ""
    address: str = ""
    hostname: str = ""
    partitions: tuple[str, ...] = ()
    active_features: str = ""
    next_state_after_reboot: str = ""

    @field_validator("reason_changed_at", mode="before")
    @classmethod
    def _num(cls, value: Any) -> Any:
        return _number(value)

    @field_validator("state", mode="before")
    @classmethod
    def _state(cls, value: Any) -> Any:
        # Later data parsers print the state as a list of words (["IDLE", "DRAIN"]).
        if isinstance(value, list):
            return str(value[0]).lower() if value else ""
        return str(value or "").lower()

    @field_validator("reason", "gres", "gres_used", "address", "hostname", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        return "" if value is None else value

    @property
    def flags(self) -> frozenset[str]:
        return frozenset(f.upper() for f in self.state_flags)

    @property
    def drain(self) -> bool:
        return "DRAIN" in self.flags

    @property
    def busy(self) -> bool:
        """Jobs still hold the node (allocated, mixed, or completing)."""
        return self.state in ("allocated", "mixed", "completing") or "COMPLETING" in self.flags

    @property
    def drained(self) -> bool:
        """DRAINED, not DRAINING: drained and nothing left on it."""
        return self.drain and not self.busy

    @property
    def down(self) -> bool:
        return self.state == "down"


class SlurmNodes(_Model):
    nodes: tuple[SlurmNode, ...] = ()


class AllocatedNode(_Model):
    nodename: str = ""


class JobResources(_Model):
    nodes: str = ""
    allocated_nodes: tuple[AllocatedNode, ...] = ()


class SlurmJob(_Model):
    job_id: int
    job_state: str = ""
    name: str = ""
    user_name: str = ""
    account: str = ""
    partition: str = ""
    nodes: str = ""
    job_resources: JobResources | None = None
    gres_detail: tuple[str, ...] = ()
    tres_alloc_str: str = ""
    tres_per_node: str = ""
    start_time: int = 0
    submit_time: int = 0
    standard_output: str = ""
    current_working_directory: str = ""
    requeue: bool = True
    batch_flag: bool = True
    array_job_id: int = 0
    array_task_id: int | None = None
    restart_cnt: int = 0
    state_reason: str = ""
    exit_code: int = 0
    memory_per_node: int | None = None

    @field_validator(
        "start_time", "submit_time", "array_job_id", "restart_cnt", "exit_code", mode="before"
    )
    @classmethod
    def _num(cls, value: Any) -> Any:
        return _number(value)

    @field_validator("array_task_id", "memory_per_node", mode="before")
    @classmethod
    def _maybe(cls, value: Any) -> Any:
        value = _number(value) if isinstance(value, dict) else value
        return value or None

    @field_validator("job_state", mode="before")
    @classmethod
    def _state(cls, value: Any) -> Any:
        if isinstance(value, list):
            return str(value[0]).upper() if value else ""
        return str(value or "").upper()

    @field_validator(
        "name",
        "user_name",
        "account",
        "partition",
        "nodes",
        "tres_alloc_str",
        "tres_per_node",
        "standard_output",
        "current_working_directory",
        "state_reason",
        mode="before",
    )
    @classmethod
    def _text(cls, value: Any) -> Any:
        return "" if value is None else value

    @property
    def job_ref(self) -> str:
        """The id people type: 1234, or 1234_7 for an array task."""
        if self.array_job_id and self.array_task_id is not None:
            return f"{self.array_job_id}_{self.array_task_id}"
        return str(self.job_id)

    @property
    def node_names(self) -> tuple[str, ...]:
        if self.job_resources and self.job_resources.allocated_nodes:
            return tuple(n.nodename for n in self.job_resources.allocated_nodes if n.nodename)
        return expand_hostlist(self.nodes)

    def gpus_on(self, node: str) -> int:
        """GPUs the job holds on `node` (gres_detail is one entry per allocated node)."""
        names = self.node_names
        if node in names and len(self.gres_detail) == len(names):
            return gpu_count(self.gres_detail[names.index(node)])
        if node in names:
            return gpu_count(self.tres_per_node)
        return 0


class SlurmJobs(_Model):
    jobs: tuple[SlurmJob, ...] = Field(default=())


_GPU = re.compile(r"(?:gres[:/])?gpu(?::[A-Za-z0-9_.-]+)?[:=](\d+)", re.ASCII)


def gpu_count(gres: str) -> int:
    """GPUs in a GRES string: `gpu:h100:4(S:0-1)`, `gres:gpu:2`, `gres/gpu=8`, `gpu:2,nic:1`."""
    return sum(int(m.group(1)) for m in _GPU.finditer(gres))


def gpu_type(gres: str) -> str:
    match = re.search(r"gpu:([A-Za-z][A-Za-z0-9_.-]*):\d+", gres, re.ASCII)
    return match.group(1) if match else ""


_RANGE = re.compile(r"([A-Za-z0-9._-]*)\[([0-9,\-]+)\]([A-Za-z0-9._-]*)", re.ASCII)
_MAX_HOSTS = 100_000


def expand_hostlist(text: str) -> tuple[str, ...]:
    """`gpu[001-003,007],login1` → each name (one bracket per name, as Slurm prints them)."""
    names: list[str] = []
    for part in re.split(r",(?![^\[]*\])", text.strip()) if text.strip() else []:
        match = _RANGE.fullmatch(part)
        if match is None:
            names.append(part)
            continue
        prefix, ranges, suffix = match.groups()
        for item in ranges.split(","):
            low, _, high = item.partition("-")
            if not low.isdigit() or (high and not high.isdigit()):
                continue
            width = len(low)
            for i in range(int(low), int(high or low) + 1):
                names.append(f"{prefix}{i:0{width}d}{suffix}")
                if len(names) > _MAX_HOSTS:
                    return tuple(names)
    return tuple(names)
