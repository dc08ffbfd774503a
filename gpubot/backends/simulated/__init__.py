"""An in-process GPU cluster for the demo and tests: one shared state (SimulatedCluster) behind
one adapter per port (SimulatedKube, SimulatedAgent, SimulatedMetrics)."""

from gpubot.backends.simulated.cluster import SimulatedCluster, simulated_state
from gpubot.backends.simulated.fleet import default_fleet
from gpubot.backends.simulated.gpus import SimulatedAgent
from gpubot.backends.simulated.kube import SimulatedKube
from gpubot.backends.simulated.metrics import SimulatedMetrics
from gpubot.backends.simulated.nodes import UNSCHEDULABLE_TAINT
from gpubot.backends.simulated.scenarios import (
    XID_GPU_LOST,
    idle_pods,
    inject_xid,
    oom_kill,
    recover_node,
    stop_kubelet,
    thermal_runaway,
)
from gpubot.backends.simulated.state import (
    H100_MEMORY_MIB,
    H100_NAME,
    ClusterState,
    SimNode,
    SimPdb,
    SimPod,
)

__all__ = [
    "H100_MEMORY_MIB",
    "H100_NAME",
    "UNSCHEDULABLE_TAINT",
    "XID_GPU_LOST",
    "ClusterState",
    "SimNode",
    "SimPdb",
    "SimPod",
    "SimulatedAgent",
    "SimulatedCluster",
    "SimulatedKube",
    "SimulatedMetrics",
    "default_fleet",
    "idle_pods",
    "inject_xid",
    "oom_kill",
    "recover_node",
    "simulated_state",
    "stop_kubelet",
    "thermal_runaway",
]
