"""A cluster's backends with each failed call counted under its dependency.

The dependencies are the cluster's API (Kubernetes, or Slurm's commands), the node agents
and Prometheus. Each async method of a backend is wrapped: when it raises,
`Tally.dependency_error` counts one error for the backend's dependency and the exception goes
on unchanged. An exception that is the dependency's answer rather than its failure (not
found, a conflict, a PodDisruptionBudget saying no, a refusal of the request's content, a
person's change, nothing left to do) is not counted.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, TypeVar, cast

from gpubot.engine.telemetry import Dependency, Tally
from gpubot.errors import (
    ConflictError,
    DisruptionBlockedError,
    InputError,
    NeedsHumanError,
    NotFoundError,
    RunDeferred,
    StopRunError,
)
from gpubot.ports import ClusterPorts

T = TypeVar("T")
# What a dependency answers, not how its call fails.
ANSWERS: tuple[type[Exception], ...] = (
    NotFoundError,
    ConflictError,
    DisruptionBlockedError,
    InputError,
    NeedsHumanError,
    StopRunError,
    RunDeferred,
)


class _Counted:
    """`target` with its async methods counting their failures; anything else read as is.
    `parts` are attributes that are backends of the same dependency (the kube adapter's
    workloads), wrapped the same way."""

    def __init__(
        self, target: object, dependency: Dependency, tally: Tally, parts: tuple[str, ...] = ()
    ) -> None:
        self._target = target
        self._dependency = dependency
        self._tally = tally
        self._parts = parts
        # name → (what the target had under it, its counted form): made once per method,
        # not at every call; made again if the target's attribute changes.
        self._made: dict[str, tuple[Any, Any]] = {}

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        made = self._made.get(name)
        if made is not None and (made[0] is value or made[0] == value):
            return made[1]
        if name in self._parts:
            counted: Any = _Counted(value, self._dependency, self._tally)
        elif inspect.iscoroutinefunction(value):
            counted = self._counting(value)
        else:
            return value
        self._made[name] = (value, counted)
        return counted

    def _counting(self, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        async def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return await method(*args, **kwargs)
            except ANSWERS:
                raise
            except Exception:
                self._tally.dependency_error(dependency=self._dependency)
                raise

        return call


def counted(target: T, dependency: Dependency, tally: Tally, parts: tuple[str, ...] = ()) -> T:
    """`target` (a backend) with its failed calls counted under `dependency`."""
    return cast(T, _Counted(target, dependency, tally, parts))


def counted_ports(ports: ClusterPorts, tally: Tally, *, api: Dependency) -> ClusterPorts:
    """A cluster's backends with failed calls counted: its API as `api` (`kubernetes` or
    `slurm`), its agents (and kernel logs, which they serve) as `agent`, its Prometheus."""
    return replace(
        ports,
        kube=counted(ports.kube, api, tally, parts=("workloads",)),
        agent=counted(ports.agent, "agent", tally),
        metrics=counted(ports.metrics, "prometheus", tally),
        kernel_logs=(
            counted(ports.kernel_logs, "agent", tally) if ports.kernel_logs is not None else None
        ),
    )


def counted_clusters(
    clusters: Mapping[str, ClusterPorts], tally: Tally, *, slurm: frozenset[str] = frozenset()
) -> dict[str, ClusterPorts]:
    """Every cluster's backends counted; the clusters named in `slurm` have Slurm for API."""
    return {
        name: counted_ports(p, tally, api="slurm" if name in slurm else "kubernetes")
        for name, p in clusters.items()
    }
