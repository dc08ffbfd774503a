"""Drain wall time: 100 pods, 1 s injected latency per eviction, through the real client.

Prints one JSON line. The stand-in Kubernetes API from tests/ serves the calls on loopback.
The baseline, measured in the same run, evicts one pod at a time (as a sequential loop
would) on a smaller node and is projected to 100 pods; the target for the drain is <= 5 s.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "integration" / "kube"))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))  # waiting, shared by the helpers

from kube_standin import KubeStandin, client_for, serve

from gpubot.actions.base import ActionContext
from gpubot.actions.drain import DrainParams, run_drain
from gpubot.backends.kube import KubernetesKubeApi
from gpubot.backends.simulated import SimulatedCluster
from gpubot.engine.clock import SystemClock
from gpubot.ports import ClusterPorts

PODS = int(os.environ.get("BENCH_PODS", "100"))
BASELINE_PODS = int(os.environ.get("BENCH_BASELINE_PODS", "5"))
LATENCY = float(os.environ.get("BENCH_EVICTION_LATENCY", "1.0"))


async def _drain(standin: KubeStandin, node: str, pods: int, concurrency: int) -> float:
    standin.add_node(node, spec={"unschedulable": True})
    for i in range(pods):
        standin.add_pod("ml", f"{node}-pod-{i}", node=node, gpus=0, owner=("Job", f"j{i}"))
    kube = KubernetesKubeApi(client_for(standin))
    sim = SimulatedCluster()
    ctx = ActionContext(
        cluster=ClusterPorts("bench", kube, sim.agent, sim.metrics),
        clock=SystemClock(),
        actor="bench",
        reason="bench",
    )
    try:
        start = time.perf_counter()
        out = await run_drain(ctx, DrainParams(node=node, concurrency=concurrency))
        elapsed = time.perf_counter() - start
    finally:
        kube.close()
    assert len(out["evicted"]) == pods
    assert standin.pods_on(node) == []
    return elapsed


async def main() -> None:
    with serve(KubeStandin(latency={"eviction": LATENCY})) as standin:
        drain_s = await _drain(standin, "gpu-bench", PODS, DrainParams(node="x").concurrency)
        base_s = await _drain(standin, "gpu-base", BASELINE_PODS, 1)
    print(
        json.dumps(
            {
                "benchmark": "drain",
                "pods": PODS,
                "eviction_latency_s": LATENCY,
                "drain_wall_s": round(drain_s, 3),
                "concurrency": DrainParams(node="x").concurrency,
                "baseline_sequential_pods": BASELINE_PODS,
                "baseline_sequential_wall_s": round(base_s, 3),
                "baseline_projected_wall_s": round(base_s / BASELINE_PODS * PODS, 1),
                "speedup": round(base_s / BASELINE_PODS * PODS / drain_s, 1),
                "target_s": 5.0,
                "within_target": drain_s <= 5.0,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
