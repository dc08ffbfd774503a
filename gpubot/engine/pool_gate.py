"""Which pool a step's node is in when the step is about to act, and what its mode allows."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel

from gpubot.actions.base import ActionSpec
from gpubot.domain import messages
from gpubot.domain.control.pools import PoolChoice, offered
from gpubot.domain.runbooks.runs import Run
from gpubot.domain.runbooks.spec import Step
from gpubot.engine.chat import best_effort
from gpubot.engine.deps import Engine
from gpubot.errors import GpubotError

log = logging.getLogger(__name__)


class PoolGate:
    """Reads the node's pool before each step that targets a node: a node whose labels
    change mid-incident follows its new pool from the next step on, and the thread is told.
    Costs nothing when no pool is configured and the default mode is remediate."""

    def __init__(self, engine: Engine) -> None:
        self.e = engine
        self._last: dict[str, str] = {}  # run id → the pool its last step was in

    @property
    def active(self) -> bool:
        policy = self.e.policy
        return bool(policy.pools) or policy.default_pool.mode != "remediate"

    async def choice(self, run: Run, params: BaseModel) -> PoolChoice | None:
        """The pool of the node the step acts on (its `node` argument, else the run's
        target); None when the step targets no node or no pool is configured. A node that
        cannot be read keeps the pool the run was planned in (else the default)."""
        return await self.of_node(run, getattr(params, "node", None))

    async def of_node(self, run: Run, node: object) -> PoolChoice | None:
        """The pool of `node` (else the run's target) now; None as for choice()."""
        if not self.active:
            return None
        node = node or run.target
        if not isinstance(node, str) or not node or run.cluster not in self.e.clusters:
            return None
        try:
            info = await self.e.clusters[run.cluster].nodes.get_node(node=node, cached=True)
        except GpubotError:
            planned = str(run.context.get("pool", {}).get("name", ""))
            pool = next((p for p in self.e.policy.pools if p.name == planned), None)
            if pool is None:
                pool = self.e.policy.default_pool
            return PoolChoice(pool, f"{node} could not be read now: the pool it was planned in")
        return self.e.policy.pool_for(cluster=run.cluster, labels=info.labels)

    async def decide(
        self, run: Run, step: Step, spec: ActionSpec[Any], params: BaseModel
    ) -> tuple[PoolChoice | None, str | None]:
        """The node's pool and, when its mode stops this step, why. Tells the thread when
        the node's pool is not the one its previous step (or the plan) was in."""
        choice = await self.choice(run, params)
        if choice is None:
            return None, None
        before = self._last.get(run.id) or str(run.context.get("pool", {}).get("name", ""))
        self._last[run.id] = choice.pool.name
        if before and before != choice.pool.name:
            text = (
                f"The node moved from pool {before} to {choice}: from step {step.id} on, "
                f"this run follows {choice.pool.name}."
            )
            log.info("%s", text, extra={"event": "run.pool_changed", "run": run.id})
            await self._say(run, text)
        why = offered(choice.pool.mode, mutating=spec.mutating, approval=step.approval)
        return choice, why

    async def window_closed(self, run: Run, params: BaseModel) -> str | None:
        """Why a step that needed an approval waits now: its node's pool has a maintenance
        window and this is outside it (the step runs at the first check inside: the tick
        looks at held runs every 15 s). None: it may run."""
        choice = await self.choice(run, params)
        window = choice.pool.window if choice is not None else None
        if window is None or window.contains(self.e.clock.now()):
            return None
        return (
            f"outside the maintenance window of pool {choice.pool.name if choice else ''} "
            f"({window}): it runs when the window opens"
        )

    async def evidence_required(self, run: Run, node: object) -> tuple[bool, str]:
        """Whether the node's pool requires evidence before anything destructive, and the
        pool in words (`gpu-a (remediate)`) for the thread."""
        choice = await self.of_node(run, node)
        pool = choice.pool if choice is not None else self.e.policy.default_pool
        return pool.evidence_required, f"{pool.name} ({pool.mode})"

    def forget(self, run_id: str) -> None:
        self._last.pop(run_id, None)

    async def _say(self, run: Run, text: str) -> None:
        await best_effort(
            self.e.notifier.post(incident_id=run.incident_id, message=messages.text(text)),
            f"post to the thread of {run.incident_id}",
        )
