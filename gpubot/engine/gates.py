"""Gates that hold a step: a resolved incident, and the blast-radius caps."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from gpubot.actions.base import ActionSpec
from gpubot.domain.policy import check_cordon, check_drain
from gpubot.domain.runbooks import Runbook
from gpubot.domain.runs import Run, RunStatus, StepStatus
from gpubot.engine.recorder import Engine


async def stale_reason(e: Engine, run: Run, runbook: Runbook) -> str | None:
    """An alert that resolved (or was replayed after recovery) must not drive a mutation."""
    if run.incident_id is None or runbook.on_resolve == "continue":
        return None
    incident = await e.store.get_incident(run.incident_id)
    if incident.is_open:
        return None
    return f"incident {incident.id} resolved before the remaining steps ran; nothing more done"


async def hold_reason(e: Engine, spec: ActionSpec[Any], params: BaseModel, run: Run) -> str | None:
    node = getattr(params, "node", None)
    if spec.blast is None or not isinstance(node, str):
        return None
    kube = e.clusters[run.cluster].kube
    if spec.blast == "cordon":
        nodes = [n for n in await kube.list_nodes() if n.is_gpu_node]
        cordoned = {n.name for n in nodes if n.unschedulable}
        return check_cordon(
            policy=e.policy.blast, fleet_size=len(nodes), cordoned=cordoned, node=node
        )
    draining: set[str] = set()
    # Any unfinished run: a drain is recorded RUNNING before its run's own status catches up.
    active = [RunStatus.RUNNING, RunStatus.WAITING_APPROVAL, RunStatus.HELD, RunStatus.NEEDS_HUMAN]
    for other in await e.store.list_runs(statuses=active):
        if other.id == run.id:
            continue
        for s in await e.store.steps(other.id):
            action = e.runbooks[other.runbook].step(s.step_id).action
            if s.status is StepStatus.RUNNING and e.registry.get(action).blast == "drain":
                draining.add(str(s.args.get("node", other.target)))
    return check_drain(policy=e.policy.blast, draining=draining, node=node)
