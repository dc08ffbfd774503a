"""The GPUs of the simulated cluster as the node agent serves them (the NodeAgent port),
with synchronous twins for the agent's simulated driver."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

from gpubot.backends.simulated.base import OnState
from gpubot.backends.simulated.diag import simulated_diag
from gpubot.backends.simulated.evidence import simulated_evidence
from gpubot.backends.simulated.state import ClusterState
from gpubot.domain.fleet.cluster import GpuState
from gpubot.domain.gpus.evidence import EvidencePart
from gpubot.errors import InputError, PermanentStepError
from gpubot.knowledge.dcgm_diag import DiagReport


class SimulatedAgent(OnState):
    def snapshot(self) -> ClusterState:
        """A copy of the state, for the agent's simulated driver to read its node from."""
        return self._cluster.snapshot()

    async def kernel_log(self, *, node: str, since: datetime, until: datetime) -> str:
        """The node's kernel lines stamped within the window (short-iso, as journalctl -k)."""
        with self._cluster.reading() as state:
            lines = list(state.node(node).kernel_log)
        return "\n".join(line for line in lines if _within(line, since, until))

    async def gpus(self, *, node: str) -> list[GpuState]:
        with self._cluster.reading() as state:
            return list(state.node(node).gpus)

    async def set_power_limit(self, *, node: str, gpu: int, watts: float) -> GpuState:
        return self.apply_power_limit(node=node, gpu=gpu, watts=watts)

    def apply_power_limit(self, *, node: str, gpu: int, watts: float) -> GpuState:
        """set_power_limit() for synchronous callers (the agent's simulated driver)."""
        with self._cluster.mutation() as state:
            sim_node = state.node(node)
            current = sim_node.gpu(gpu)
            if not current.power_min_w <= watts <= current.power_max_w:
                raise InputError(
                    f"power limit {watts:g} W is outside {node} GPU {gpu}'s range "
                    f"{current.power_min_w:g}-{current.power_max_w:g} W"
                )
            if current.lost:
                raise PermanentStepError(f"{node} GPU {gpu} is lost; NVML cannot reach it")
            draw = min(current.power_draw_w, watts)
            temperature = current.temperature_c
            if current.power_draw_w > 0 and temperature > 35:
                # Less power, less heat: the die cools roughly in proportion.
                temperature = 35 + round((temperature - 35) * draw / current.power_draw_w)
            updated = replace(
                current, power_limit_w=watts, power_draw_w=draw, temperature_c=temperature
            )
            sim_node.set_gpu(updated)
            return updated

    async def reset_gpu(self, *, node: str, gpu: int, uuid: str | None = None) -> GpuState:
        """Reset one GPU, as `nvidia-smi -r` would: only when no pod holds it."""
        return self.apply_reset(node=node, gpu=gpu, uuid=uuid)

    def apply_reset(self, *, node: str, gpu: int, uuid: str | None = None) -> GpuState:
        """reset_gpu() for synchronous callers (the agent's simulated driver)."""
        with self._cluster.mutation() as state:
            sim_node = state.node(node)
            current = sim_node.gpu(gpu)
            if uuid is not None and current.uuid != uuid:
                raise PermanentStepError(
                    f"{node} GPU {gpu} is {current.uuid}, not {uuid}; not resetting it"
                )
            holder = state.holder(node, gpu)
            if holder is not None:
                raise PermanentStepError(
                    f"{node} GPU {gpu} is held by {holder.ref}; drain the node before a reset"
                )
            sim_node.set_gpu(
                replace(current, lost=False, xid_errors=(), power_limit_w=current.power_default_w)
            )
            state.settle(node, gpu)
            return sim_node.gpu(gpu)

    async def diag(self, *, node: str, level: int, gpus: Sequence[int] | None = None) -> DiagReport:
        """DCGM diagnostics, as `dcgmi diag` on the node would run them (diag.py)."""
        return self.run_diag(node=node, level=level, gpus=gpus or ())

    async def diag_status(self, *, node: str) -> str | None:
        return self.dcgm_status(node=node)

    def dcgm_status(self, *, node: str) -> str | None:
        """diag_status() for synchronous callers: None when DCGM can run, else why not."""
        with self._cluster.reading() as state:
            return state.node(node).dcgm_unavailable or None

    def run_diag(self, *, node: str, level: int, gpus: Sequence[int] = ()) -> DiagReport:
        """diag() for synchronous callers (the agent's simulated driver)."""
        with self._cluster.reading() as state:
            return simulated_diag(state, node=node, level=level, gpus=gpus)

    async def gather_evidence(self, *, node: str) -> list[EvidencePart]:
        """A small bundle shaped like the real tools' (simulated/evidence.py)."""
        return self.evidence_parts(node=node)

    def evidence_parts(self, *, node: str) -> list[EvidencePart]:
        """gather_evidence() for synchronous callers (the agent's simulated driver)."""
        with self._cluster.reading() as state:
            return simulated_evidence(state, node=node, now=datetime.now(UTC))


def _within(line: str, since: datetime, until: datetime) -> bool:
    """Whether a short-iso line's stamp falls in the window (an unstamped line does not)."""
    try:
        stamp = datetime.fromisoformat(line.split(" ", 1)[0])
    except ValueError:
        return False
    return since <= stamp <= until
