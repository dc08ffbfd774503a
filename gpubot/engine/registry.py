"""Action registry: action name → params model, risk, and its plan/run/check functions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from gpubot.actions import (
    diag,
    drain,
    evidence,
    gpu,
    handoff,
    messaging,
    node,
    power,
    reclaim_notice,
    thermal,
    triage,
    workloads,
)
from gpubot.actions import gpu_ledger as gpu_history
from gpubot.actions.base import ActionSpec
from gpubot.actions.outputs import OUTPUTS
from gpubot.domain.fleet.reclaim import ReclaimPolicy
from gpubot.errors import RunbookError
from gpubot.knowledge.dcgm_diag import DiagUnavailable


class Registry:
    def __init__(self, specs: Iterable[ActionSpec[Any]]) -> None:
        self._specs: dict[str, ActionSpec[Any]] = {}
        for declared in specs:
            spec = with_outputs(declared)
            if spec.name in self._specs:
                raise ValueError(f"action {spec.name!r} registered twice")
            self._specs[spec.name] = spec

    def get(self, name: str) -> ActionSpec[Any]:
        try:
            return self._specs[name]
        except KeyError:
            known = ", ".join(sorted(self._specs))
            raise RunbookError(f"unknown action {name!r} (known: {known})") from None

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def specs(self) -> list[ActionSpec[Any]]:
        return [self._specs[n] for n in sorted(self._specs)]


def builtin_registry(
    *,
    reclaim: ReclaimPolicy | None = None,
    diag_level: int = 1,
    diag_unavailable: DiagUnavailable = "approve",
) -> Registry:
    """Every shipped action; `reclaim` is the config's idle-GPU reclamation policy,
    `diag_level` the DCGM diagnostics level gpu.diag runs by default (policy.diag_level),
    `diag_unavailable` what gpu.diag does when DCGM cannot run (policy.diag_unavailable)."""
    reclaim = reclaim or ReclaimPolicy()
    return Registry(
        [
            *node.SPECS,
            *drain.SPECS,
            *evidence.SPECS,
            *handoff.SPECS,
            *gpu.SPECS,
            *diag.specs(diag_level, diag_unavailable),
            *gpu_history.SPECS,
            *messaging.SPECS,
            *triage.SPECS,
            *power.SPECS,
            *thermal.SPECS,
            *reclaim_notice.specs(reclaim),
            *workloads.specs(reclaim),
        ]
    )


def with_outputs(spec: ActionSpec[Any]) -> ActionSpec[Any]:
    """The spec with its outputs from actions/outputs.py, unless it declares its own."""
    if spec.outputs is not None or spec.name not in OUTPUTS:
        return spec
    return replace(spec, outputs=OUTPUTS[spec.name])
