"""DCGM metrics of the simulated cluster (the Metrics port): a PromQL subset over every
GPU's current readings, labelled as the DCGM exporter labels them."""

from __future__ import annotations

from collections.abc import Callable

from gpubot.backends.simulated import promql as promql_subset
from gpubot.backends.simulated.base import OnState
from gpubot.backends.simulated.state import ClusterState, SimPod
from gpubot.domain.fleet.cluster import GpuState, Sample

_METRICS: dict[str, Callable[[GpuState], float]] = {
    "DCGM_FI_DEV_GPU_UTIL": lambda g: g.utilization_pct,
    "DCGM_FI_DEV_GPU_TEMP": lambda g: g.temperature_c,
    "DCGM_FI_DEV_POWER_USAGE": lambda g: g.power_draw_w,
    "DCGM_FI_DEV_FB_USED": lambda g: g.memory_used_mib,
    "DCGM_FI_DEV_FB_FREE": lambda g: g.memory_total_mib - g.memory_used_mib,
    # The exporter reports the code of the last XID seen, 0 when there has been none.
    "DCGM_FI_DEV_XID_ERRORS": lambda g: g.xid_errors[-1] if g.xid_errors else 0,
}


class SimulatedMetrics(OnState):
    async def query(self, *, promql: str) -> list[Sample]:
        """A PromQL subset (see promql.py) over every GPU's current DCGM readings."""
        expr = promql_subset.parse(promql, metrics=_METRICS)
        with self._cluster.reading() as state:
            series = self._gpu_series(state)

        def source(metric: str) -> list[tuple[dict[str, str], float]]:
            value_of = _METRICS[metric]
            return [({"__name__": metric, **labels}, float(value_of(g))) for labels, g in series]

        return promql_subset.evaluate(expr, source)

    def _gpu_series(self, state: ClusterState) -> list[tuple[dict[str, str], GpuState]]:
        """Each GPU with its labels as the DCGM exporter sets them; call with the lock held."""
        holders: dict[tuple[str, int], SimPod] = {}
        for pod in state.pods:  # one pass, not one per GPU: the benchmark fleet is 10,000 GPUs
            for index in pod.gpu_indices:
                holders.setdefault((pod.node, index), pod)
        series: list[tuple[dict[str, str], GpuState]] = []
        for node in state.nodes.values():
            for gpu in node.gpus:
                labels = {
                    "Hostname": node.name,
                    "gpu": str(gpu.index),
                    "UUID": gpu.uuid,
                    "modelName": gpu.name,
                    "cluster": self._cluster.name,
                }
                # The exporter sets pod labels only while a pod holds the GPU.
                if (holder := holders.get((node.name, gpu.index))) is not None:
                    labels |= {
                        "pod": holder.name,
                        "namespace": holder.namespace,
                        "container": holder.container,
                    }
                series.append((labels, gpu))
        return series
