"""Pod reads of the simulated cluster for triage: one pod, its logs, its events."""

from __future__ import annotations

import threading
from collections.abc import Callable

from gpubot.backends.simulated.state import ClusterState
from gpubot.domain.cluster import PodEvent, PodInfo


class SimulatedPodReads:
    """Mixed into SimulatedCluster; the logs and events are derived from the pod's state."""

    # Provided by SimulatedCluster.
    _lock: threading.Lock
    _current: Callable[[], ClusterState]

    async def get_pod(self, *, namespace: str, name: str) -> PodInfo:
        with self._lock:
            return self._current().pod(namespace, name).info()

    async def pod_logs(
        self,
        *,
        namespace: str,
        name: str,
        container: str | None = None,
        previous: bool = False,
        tail_lines: int = 100,
    ) -> str:
        with self._lock:
            pod = self._current().pod(namespace, name)
        if previous:
            last = pod.termination()
            if last is None:
                return ""
            lines = [f"[{pod.container}] starting step loop", *last.message.splitlines()]
        else:
            lines = [f"[{pod.container}] running normally"]
        return "\n".join(lines[-tail_lines:])

    async def pod_events(self, *, namespace: str, name: str) -> list[PodEvent]:
        with self._lock:
            pod = self._current().pod(namespace, name)
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
