"""Reads what a stopped run left behind (the live node, the run's steps) for its end message."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from gpubot.domain.results import Text
from gpubot.domain.runbooks.left_behind import (
    Standing,
    StepRecord,
    node_standing,
    workload_standing,
)
from gpubot.domain.runbooks.runs import Run, StepState
from gpubot.errors import GpubotError

if TYPE_CHECKING:  # the recorder imports this module
    from gpubot.engine.deps import Engine

READ_SECONDS = 10.0  # a node read that takes longer is reported as unreadable


def _records(engine: Engine, run: Run, states: Sequence[StepState]) -> list[StepRecord]:
    runbook = engine.runbooks.get(run.runbook)
    if runbook is None:
        return []
    return [
        StepRecord(
            action=runbook.step(s.step_id).action,
            status=s.status.value,
            args=s.args,
            output=s.output,
            attempts=s.attempts,
        )
        for s in sorted(states, key=lambda s: s.position)
    ]


async def standing(engine: Engine, run: Run, states: Sequence[StepState]) -> Standing | None:
    """Where the run's node (its target) or workload stands now; None for a dry run, or a
    run that acts on neither."""
    if run.dry_run:
        return None
    steps = _records(engine, run, states)
    if run.target is not None:
        params = run.context.get("params", {})
        xid = str(params.get("xid") or "") if isinstance(params, Mapping) else ""
        ports = engine.clusters.get(run.cluster)
        if ports is None:
            return node_standing(
                node=run.target, steps=steps, live=None, read_error="unknown cluster", xid=xid
            )
        try:
            live = await asyncio.wait_for(
                ports.nodes.get_node(node=run.target), timeout=READ_SECONDS
            )
        except (GpubotError, TimeoutError, OSError) as exc:
            error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return node_standing(
                node=run.target, steps=steps, live=None, read_error=error[:200], xid=xid
            )
        return node_standing(node=run.target, steps=steps, live=live, xid=xid)
    if any(s.action.startswith("workload.") for s in steps):
        return workload_standing(steps=steps)
    return None


async def standing_blocks(
    engine: Engine, run: Run, states: Sequence[StepState]
) -> tuple[Text, ...]:
    """The "where things stand" lines as message blocks (none when there is nothing to say)."""
    found = await standing(engine, run, states)
    if found is None:
        return ()
    return (Text("Where things stand: " + found.text()),)
