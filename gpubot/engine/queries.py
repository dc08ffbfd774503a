"""What Slack, the web app and the CLI may read through the service: incidents with their runs,
the audit trail, a GPU's history, the fleet and its GPUs, the clock and who leads."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime

from gpubot.domain.control.audit import AuditEvent
from gpubot.domain.control.pools import PoolChoice
from gpubot.domain.control.safety_caps import Policy
from gpubot.domain.fleet.cluster import GpuState, NodeInfo
from gpubot.domain.gpus.ledger import GpuEvent
from gpubot.domain.incidents.correlation import Incident, IncidentStatus
from gpubot.domain.runbooks.runs import Run, StepState
from gpubot.domain.runbooks.spec import Runbook
from gpubot.engine.deps import Engine
from gpubot.engine.planning import cluster_named


class Queries:
    """Read-only views of the engine's state, for the interfaces in front of the service."""

    def __init__(self, engine: Engine, *, warming: Callable[[], bool] = lambda: False) -> None:
        self._e = engine
        self._warming = warming

    def clusters(self) -> Sequence[str]:
        return tuple(self._e.clusters)

    def runbooks(self) -> Sequence[str]:
        return tuple(self._e.runbooks)

    def runbook(self, name: str) -> Runbook | None:
        return self._e.runbooks.get(name)

    def now(self) -> datetime:
        return self._e.clock.now()

    def is_leader(self) -> bool:
        return self._e.leadership.is_leader()

    def caches_filling(self) -> bool:
        """Whether the clusters' node caches are still filling after a start."""
        return self._warming()

    async def store_answers(self) -> None:
        """Raises when the store cannot be read (the readiness probe's question)."""
        await self._e.store.list_incidents(limit=1)

    async def audit_key_matches(self) -> None:
        """AuditKeyError (one line) when this process's audit key is not the one the chain
        is sealed with: it could not append a single event."""
        await self._e.store.check_key()

    async def incidents(self, *, open_only: bool, limit: int) -> list[Incident]:
        status = IncidentStatus.OPEN if open_only else None
        return await self._e.store.list_incidents(status=status, limit=limit)

    async def incident_with_runs(
        self, incident_id: str
    ) -> tuple[Incident, list[tuple[Run, list[StepState]]]]:
        incident = await self._e.store.get_incident(incident_id)
        runs = await self._e.store.list_runs(incident_id=incident.id)
        return incident, [(r, await self._e.store.steps(r.id)) for r in runs]

    async def incident_events(self, incident_id: str) -> list[AuditEvent]:
        await self._e.store.get_incident(incident_id)  # NotFoundError for a wrong id
        return await self._e.store.events(incident_id=incident_id)

    async def gpu_history(self, *, uuid: str | None, node: str | None) -> list[GpuEvent]:
        return await self._e.store.gpu_history(uuid=uuid, node=node)

    async def node_gpus(self, *, cluster: str, node: str) -> tuple[NodeInfo, list[GpuState]]:
        ports = cluster_named(self._e, cluster)
        found = await ports.nodes.get_node(node=node)
        return found, await ports.agent.gpus(node=found.name)

    async def node_pool(self, *, cluster: str, node: str) -> PoolChoice:
        """The pool a node is in now (its Node labels), and why."""
        ports = cluster_named(self._e, cluster)
        found = await ports.nodes.get_node(node=node)
        return self._e.policy.pool_for(cluster=cluster, labels=found.labels)

    def policy_digest(self) -> str:
        return self._e.policy.digest

    def policy(self) -> Policy:
        """The policy in force (read-only: a frozen value)."""
        return self._e.policy

    async def fleet_gpus(self, *, cluster: str) -> list[tuple[NodeInfo, list[GpuState]]]:
        ports = cluster_named(self._e, cluster)
        nodes = [n for n in await ports.nodes.list_nodes() if n.is_gpu_node]
        gpus = await asyncio.gather(*(ports.agent.gpus(node=n.name) for n in nodes))
        return list(zip(nodes, gpus, strict=True))
