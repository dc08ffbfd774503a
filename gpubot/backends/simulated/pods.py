"""Pod reads of the simulated cluster (the PodReads port): pods, budgets, and the logs and
events triage reads, derived from each pod's state."""

from __future__ import annotations

from gpubot.backends.simulated.base import OnState
from gpubot.domain.fleet.cluster import PodDisruptionBudget, PodEvent, PodInfo


class SimulatedPodReads(OnState):
    async def list_pods(
        self, *, node: str | None = None, namespace: str | None = None, cached: bool = False
    ) -> list[PodInfo]:
        with self._cluster.reading() as state:
            return [
                p.info()
                for p in state.pods
                if (node is None or p.node == node)
                and (namespace is None or p.namespace == namespace)
            ]

    async def gpu_pods(self, *, node: str) -> list[PodInfo]:
        return [p for p in await self.list_pods(node=node) if p.gpu_request > 0]

    async def list_pdbs(self, *, namespace: str | None = None) -> list[PodDisruptionBudget]:
        with self._cluster.reading() as state:
            return [
                state.pdb_info(b)
                for b in state.pdbs
                if namespace is None or b.namespace == namespace
            ]

    async def get_pod(self, *, namespace: str, name: str) -> PodInfo:
        with self._cluster.reading() as state:
            return state.pod(namespace, name).info()

    async def pod_logs(
        self,
        *,
        namespace: str,
        name: str,
        container: str | None = None,
        previous: bool = False,
        tail_lines: int = 100,
    ) -> str:
        with self._cluster.reading() as state:
            pod = state.pod(namespace, name)
        if previous:
            last = pod.termination()
            if last is None:
                return ""
            lines = [f"[{pod.container}] starting step loop", *last.message.splitlines()]
        else:
            lines = [f"[{pod.container}] running normally"]
        return "\n".join(lines[-tail_lines:])

    async def pod_events(self, *, namespace: str, name: str) -> list[PodEvent]:
        with self._cluster.reading() as state:
            pod = state.pod(namespace, name)
        last = pod.termination()
        if last is None:
            return []
        return [
            PodEvent("Normal", "Pulled", f'Container image for "{pod.container}" already present'),
            PodEvent(
                "Warning",
                "BackOff",
                f"Back-off restarting failed container {pod.container} in pod {name}",
                count=pod.restart_count,
                last_seen=last.finished_at,
            ),
        ]
