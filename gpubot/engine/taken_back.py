"""A node that a run quarantined and a person put back in service: the run stops there."""

from __future__ import annotations

import logging

from gpubot.domain.runbooks.runs import Run, StepState, StepStatus
from gpubot.domain.runbooks.spec import Runbook
from gpubot.engine.deps import Engine
from gpubot.errors import GpubotError

log = logging.getLogger(__name__)

# The taints gpubot's runbooks add (gpubot.io/xid, gpubot.io/thermal, …): left in place when
# a person uncordons the node, and named in the thread so they can be removed too.
_OWN_TAINT_PREFIX = "gpubot.io/"
_RELEASES = frozenset({"node.uncordon"})  # actions by which a run puts a node back itself


def cordoned_here(e: Engine, run: Run, runbook: Runbook, states: list[StepState]) -> str | None:
    """The node this run cordoned and has not released itself; None when it has none."""
    node: str | None = None
    for s in states:
        if s.status is not StepStatus.SUCCEEDED or "observed" in s.output:
            continue  # an observe pool's step recorded what it would do: it cordoned nothing
        try:
            action = runbook.step(s.step_id).action
            blast = e.registry.get(action).blast
        except (KeyError, GpubotError):
            continue  # a step no longer in the runbook, an action no longer registered
        if action in _RELEASES:
            return None
        if blast == "cordon":
            value = s.args.get("node", run.target)
            node = value if isinstance(value, str) and value else node
    return node


async def taken_back(
    e: Engine, run: Run, runbook: Runbook, states: list[StepState], *, waiting_at: str
) -> str | None:
    """Why the run must stop when the node it cordoned is schedulable again without the run
    having uncordoned it (`kubectl uncordon`, another tool, another run): a person has taken
    the node back, so gpubot does nothing more to it. None while the node is still cordoned.

    Read from the adapter's node cache where it has one (cheap: this runs before each
    waiting mutating step) and, when that says schedulable, confirmed by an uncached read;
    a read that fails says nothing (the step's own checks decide)."""
    node = cordoned_here(e, run, runbook, states)
    if node is None or run.cluster not in e.clusters:
        return None
    nodes = e.clusters[run.cluster].nodes
    try:
        info = await nodes.get_node(node=node, cached=True)
        if not info.unschedulable:
            # A cache may not have seen the run's own cordon yet: only the API server's own
            # answer says the node was put back.
            info = await nodes.get_node(node=node)
    except GpubotError:
        return None
    if info.unschedulable:
        return None
    own = [t for t in info.taints if t.key.startswith(_OWN_TAINT_PREFIX)]
    keys = " ".join(f"{key}-" for key in sorted({t.key for t in own}))
    left = (
        f" gpubot's taint {', '.join(sorted(str(t) for t in own))} is still on it: remove it "
        f"with `kubectl taint node {node} {keys}` or `/gpu run release-node node={node}`."
        if own
        else ""
    )
    log.warning(
        "%s was uncordoned outside run %s: the run stops",
        node,
        run.id,
        extra={"event": "run.taken_back", "run": run.id, "node": node},
    )
    return (
        f"{node} was uncordoned outside this run (by hand, say `kubectl uncordon`) while it "
        f"waited at step {waiting_at}: the node is back in service, so the run stops here "
        f"and does nothing more to it; its blast-radius slot is free.{left}"
    )
