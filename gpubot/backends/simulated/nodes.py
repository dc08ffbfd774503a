"""Node operations and agent addresses of the simulated cluster (the NodeOps and
AgentAddresses ports)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from gpubot.backends.simulated.base import OnState
from gpubot.domain.fleet.cluster import (
    CORDON_BY_ANNOTATION,
    CORDON_REASON_ANNOTATION,
    FleetView,
    NodeInfo,
    Taint,
)

if TYPE_CHECKING:
    from gpubot.backends.simulated.cluster import SimulatedCluster

SIMULATED_NODE_IP = "127.0.0.1"  # what the simulated cluster reports as every node's address
# The taint the node controller adds to a cordoned node; kept so the simulator reads like one.
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")


class SimulatedNodes(OnState):
    """Nodes read from the state itself, so every read is current and a cached read is the
    same read; cordons, taints and metadata change it as one transaction each."""

    def __init__(self, cluster: SimulatedCluster) -> None:
        super().__init__(cluster)
        # The last fleet read, to count slots freed between reads (FleetView.released).
        self._fleet: tuple[frozenset[str], frozenset[str], int] = (frozenset(), frozenset(), 0)
        self._became: dict[str, int] = {}  # times each node became cordoned through this API

    async def list_nodes(self) -> list[NodeInfo]:
        with self._cluster.reading() as state:
            return [n.info() for n in state.nodes.values()]

    async def get_node(self, *, node: str, cached: bool = False) -> NodeInfo:
        with self._cluster.reading() as state:
            return state.node(node).info()

    async def warm(self, *, timeout_s: float) -> bool:
        return True  # read from the state itself: nothing to fill

    async def gpu_fleet(self) -> FleetView:
        """Read from the state itself: always current (`live`)."""
        with self._cluster.reading() as state:
            infos = [n.info() for n in state.nodes.values()]
            gpu = frozenset(n.name for n in infos if n.is_gpu_node)
            cordoned = frozenset(n.name for n in infos if n.is_gpu_node and n.unschedulable)
            seen_gpu, seen_cordoned, released = self._fleet
            if (seen_cordoned - cordoned) or (gpu - seen_gpu and seen_gpu):
                released += 1
            self._fleet = (gpu, cordoned, released)
            became = dict(self._became)
        return FleetView(
            gpu_nodes=gpu,
            cordoned=cordoned,
            as_of=datetime.now(UTC),
            released=released,
            live=True,
            cordon_seen=became,
        )

    async def node_internal_ips(self) -> dict[str, str]:
        # Loopback for every node: a `gpubot agent --driver simulated` on this machine may
        # answer for one; with no agent configured the simulated GPUs answer in-process.
        return {name: SIMULATED_NODE_IP for name in self._cluster.node_names()}

    async def pod_ips_by_node(self, *, namespace: str, selector: str) -> dict[str, str]:
        return {name: SIMULATED_NODE_IP for name in self._cluster.node_names()}

    async def set_unschedulable(
        self,
        *,
        node: str,
        value: bool,
        actor: str,
        reason: str,
        dry_run: bool = False,
        expect_version: str = "",  # the simulated nodes keep no versions: reads return ""
    ) -> None:
        if dry_run:
            await self.get_node(node=node)  # the only check this API server makes
            return
        with self._cluster.mutation() as state:
            sim_node = state.node(node)
            if value and not sim_node.unschedulable:
                # Counted as it happens, as a watch delivers each event: a cordon undone by
                # hand before the next fleet read was still seen.
                self._became[node] = self._became.get(node, 0) + 1
            sim_node.unschedulable = value
            sim_node.taints = [t for t in sim_node.taints if t != UNSCHEDULABLE_TAINT]
            if value:
                sim_node.taints.append(UNSCHEDULABLE_TAINT)
                sim_node.annotations[CORDON_BY_ANNOTATION] = actor
                sim_node.annotations[CORDON_REASON_ANNOTATION] = reason
            else:
                sim_node.annotations.pop(CORDON_BY_ANNOTATION, None)
                sim_node.annotations.pop(CORDON_REASON_ANNOTATION, None)

    async def set_taint(
        self, *, node: str, taint: Taint, present: bool, dry_run: bool = False
    ) -> None:
        if dry_run:
            await self.get_node(node=node)
            return
        with self._cluster.mutation() as state:
            sim_node = state.node(node)
            # Key and effect identify a taint; adding it again replaces its value.
            kept = [t for t in sim_node.taints if (t.key, t.effect) != (taint.key, taint.effect)]
            sim_node.taints = [*kept, taint] if present else kept

    async def set_node_metadata(
        self,
        *,
        node: str,
        labels: Mapping[str, str | None] | None = None,
        annotations: Mapping[str, str | None] | None = None,
    ) -> None:
        with self._cluster.mutation() as state:
            sim_node = state.node(node)
            for target, changes in ((sim_node.labels, labels), (sim_node.annotations, annotations)):
                for key, value in (changes or {}).items():
                    if value is None:
                        target.pop(key, None)
                    else:
                        target[key] = value

    async def post_node_event(
        self,
        *,
        node: str,
        reason: str,
        message: str,
        event_type: Literal["Normal", "Warning"] = "Normal",
    ) -> None:
        with self._cluster.reading() as state:
            state.node(node)  # NotFoundError for an unknown node, as the API says
            self._cluster.node_events.append((node, event_type, reason, message))

    async def flush_events(self, *, timeout_s: float) -> int:
        return 0  # every event was kept when it was made
