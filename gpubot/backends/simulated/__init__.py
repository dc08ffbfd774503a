"""An in-process GPU cluster for the demo and tests: KubeApi, NodeAgent and Metrics in one."""

from gpubot.backends.simulated.cluster import UNSCHEDULABLE_TAINT, SimulatedCluster
from gpubot.backends.simulated.fleet import default_fleet
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
    "SimulatedCluster",
    "default_fleet",
    "idle_pods",
    "inject_xid",
    "oom_kill",
    "recover_node",
    "stop_kubelet",
    "thermal_runaway",
]
