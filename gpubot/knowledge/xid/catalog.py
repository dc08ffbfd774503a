"""NVIDIA's XID catalog: what an XID code means and what NVIDIA says to do first."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

CATALOG_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"

# NVIDIA's immediate-action buckets that take the GPU or the whole node out of service
# (reset it, reboot the machine or VM). gpubot answers all of them with the same drain-and-
# reset runbook, "xid79"; every other bucket is an application restart, a log-and-ignore or
# a human investigation, which no runbook should automate.
RESET_BUCKETS = frozenset(
    {
        "RESET_GPU",
        "RESTART_BM",
        "RESTART_VM",
        # Solo XID 48 means "reset the GPU" (a reset or reboot clears a DBE).
        "WORKFLOW_XID_48",
        # XID 74: the catalog says a GPU reset or node reboot clears it.
        "WORKFLOW_NVLINK_ERR",
    }
)
RESET_RUNBOOK = "xid79"


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    code: int = Field(ge=0)
    name: str
    action: str | None
    description: str


class _Catalog(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    xids: tuple[_Entry, ...]


@dataclass(frozen=True)
class XidInfo:
    """One catalog entry; `action` is None where NVIDIA publishes no immediate action."""

    code: int
    name: str
    action: str | None
    description: str
    runbook: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "xid": self.code,
            "name": self.name,
            "action": self.action,
            "description": self.description,
            "runbook": self.runbook,
        }


def _runbook_for(action: str | None) -> str | None:
    return RESET_RUNBOOK if action in RESET_BUCKETS else None


@cache
def catalog() -> dict[int, XidInfo]:
    """Every XID in the shipped catalog, by code (parsed once; the file ships with gpubot)."""
    text = resources.files("gpubot.knowledge.xid").joinpath("catalog.yaml").read_text("utf-8")
    # libyaml when PyYAML has it: the pure-Python parser takes most of `gpubot xid`'s time.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    parsed = _Catalog.model_validate(yaml.load(text, Loader=loader))  # noqa: S506 (safe loader)
    return {
        e.code: XidInfo(
            code=e.code,
            name=e.name,
            action=e.action,
            description=e.description,
            runbook=_runbook_for(e.action),
        )
        for e in parsed.xids
    }


def explain(code: int) -> XidInfo | None:
    """The catalog entry for `code`, or None when NVIDIA's catalog does not list it."""
    return catalog().get(code)
