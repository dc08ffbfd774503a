"""Crash injection at the store and cluster seams, and a count of every cluster mutation.

A `Fate` names one instant at which the process dies. From then on every call through a
seam raises `Crash` (a BaseException, so no `except Exception` in gpubot swallows it): the
dead process writes nothing more and changes nothing more, as after a SIGKILL. Because each
store call is one transaction, dying between calls covers every outcome a real kill can
have (a kill inside a transaction is rolled back, which is the same as dying before it).
"""

from __future__ import annotations

import inspect
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gpubot.backends.simulated import SimulatedCluster
from gpubot.domain.runbooks.runs import StepState, StepStatus
from gpubot.ports import ClusterPorts

# Every KubeApi/NodeAgent call that changes the cluster.
MUTATIONS = frozenset(
    {
        "set_unschedulable",
        "set_taint",
        "set_node_metadata",
        "evict",
        "delete_pod",
        "reset_gpu",
        "set_power_limit",
    }
)
# What identifies a mutation across runs: not who asked or why (run ids differ).
_NOT_IDENTITY = frozenset({"actor", "reason", "grace_seconds", "dry_run"})


class Crash(BaseException):
    """The process died at this instant."""


@dataclass
class Fate:
    """Where the process dies: `<boundary>:<step id>`, or None to live on.

    Boundaries of one step: `before-start` (its RUNNING record is never written),
    `before-effect` (recorded RUNNING, dies at its first cluster mutation), `mid-effect`
    (after its first mutation, before the rest), `before-done` (every mutation made, the
    SUCCEEDED record never written), `after-done` (SUCCEEDED written, nothing after it).
    """

    point: str | None = None
    dead: bool = False
    running: str | None = None  # the step last recorded RUNNING

    def alive(self) -> None:
        if self.dead:
            raise Crash("the process is dead")

    def at(self, boundary: str, step: str | None) -> None:
        if self.point is not None and self.point == f"{boundary}:{step}":
            self.dead = True
            raise Crash(self.point)


class CrashingStore:
    """The real store, with the process dying where `fate` says."""

    def __init__(self, inner: Any, fate: Fate) -> None:
        self._inner = inner
        self._fate = fate

    async def save_step(self, state: StepState, *, audit: Any = None) -> None:
        self._before(state)
        await self._inner.save_step(state, audit=audit)
        self._after(state)

    async def save_step_read(self, state: StepState, *, audit: Any) -> Any:
        self._before(state)
        view = await self._inner.save_step_read(state, audit=audit)
        self._after(state)
        return view

    def _before(self, state: StepState) -> None:
        self._fate.alive()
        if state.status is StepStatus.RUNNING:
            self._fate.at("before-start", state.step_id)
        if state.status is StepStatus.SUCCEEDED:
            self._fate.at("before-done", state.step_id)

    def _after(self, state: StepState) -> None:
        if state.status is StepStatus.RUNNING:
            self._fate.running = state.step_id
        if state.status is StepStatus.SUCCEEDED:
            self._fate.at("after-done", state.step_id)

    def __getattr__(self, name: str) -> Any:
        return _guarded(getattr(self._inner, name), self._fate)


# The adapter's own bookkeeping, no call to the cluster: what the test's wait_idle runs after
# a death to let the tasks end.
LOCAL = frozenset({"flush_events"})


@dataclass
class CountingPort:
    """One port of a SimulatedCluster (its kube, agent or metrics adapter): counts each
    mutation that took effect, and dies inside a step where `fate` says."""

    port: Any
    fate: Fate
    effects: Counter[tuple[Any, ...]] = field(default_factory=Counter)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.port, name)
        if name in LOCAL:
            return attr
        if name not in MUTATIONS:
            return _guarded(attr, self.fate)

        async def mutate(**kw: Any) -> Any:
            self.fate.alive()
            if kw.get("dry_run"):
                return await attr(**kw)
            self.fate.at("before-effect", self.fate.running)
            result = await attr(**kw)
            self.effects[identity(name, kw)] += 1
            self.fate.at("mid-effect", self.fate.running)
            return result

        return mutate


def identity(name: str, kw: dict[str, Any]) -> tuple[Any, ...]:
    return (name, *sorted((k, str(v)) for k, v in kw.items() if k not in _NOT_IDENTITY))


def _guarded(attr: Any, fate: Fate) -> Any:
    if not inspect.iscoroutinefunction(attr):
        return attr

    async def call(*args: Any, **kw: Any) -> Any:
        fate.alive()
        result = await attr(*args, **kw)
        fate.alive()  # died meanwhile (another task): the caller goes no further
        return result

    return call


def counting_ports(
    sim: SimulatedCluster, fate: Fate, effects: Counter[tuple[Any, ...]]
) -> ClusterPorts:
    """The cluster's three ports, each counted and doomed by the same fate."""
    kube, agent, metrics = (
        CountingPort(port, fate, effects) for port in (sim.kube, sim.agent, sim.metrics)
    )
    return ClusterPorts(sim.name, kube, agent, metrics)  # type: ignore[arg-type]
