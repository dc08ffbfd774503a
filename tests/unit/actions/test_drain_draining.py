"""node.drain ends at DRAINED, not at DRAINING: with no job left but the scheduler still
draining the node (Slurm: an epilog, a job completing), it waits, and stops at the step's
timeout if the node never drains (fake clock)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from test_drain_terminating import DRAIN, _drain

from gpubot.actions.base import ActionContext
from gpubot.actions.drain import DrainParams, check_drain
from gpubot.domain.fleet.cluster import NodeInfo
from gpubot.engine.clock import FakeClock
from gpubot.ports import ClusterPorts

MakeHarness = Any  # the `harness` fixture in conftest.py


def _draining_for(h: Any, looks: int | None) -> list[int]:
    """The node reads draining for its first `looks` reads once it is cordoned (None: ever)."""
    reads: list[int] = []
    get_node = h.cluster.kube.get_node

    async def reading(**kw: Any) -> Any:
        info = await get_node(**kw)
        if not info.unschedulable:
            return info
        reads.append(1)
        return replace(info, draining=looks is None or len(reads) <= looks)

    h.cluster.kube.get_node = reading
    return reads


async def test_drain_waits_for_drained(harness: MakeHarness) -> None:
    h = harness(DRAIN % ("", "10m"))
    reads = _draining_for(h, looks=6)
    run, drain = await _drain(h)
    assert run.status.value == "succeeded", run.note
    assert drain.status.value == "succeeded"
    assert len(reads) > 6
    assert "waiting for the scheduler to report it drained" in h.notifier.text()
    # Looked again with the drain's backoff while draining, not in a tight loop.
    assert h.clock.slept[:2] == [1, 2]


async def test_a_node_that_never_drains_stops_at_the_timeout(harness: MakeHarness) -> None:
    h = harness(DRAIN % ("", "2m"))
    _draining_for(h, looks=None)
    _run, drain = await _drain(h)
    assert drain.status.value == "failed"
    assert "still reports it draining, not drained" in drain.error
    assert sum(h.clock.slept) <= 120
    assert h.notifier.text().count("waiting for the scheduler to report it drained") == 1


class _DrainingNode:
    """Just what check() reads: no pods left, the node still draining."""

    workloads = None

    async def list_pods(self, **kw: Any) -> list[Any]:
        return []

    async def get_node(self, *, node: str, cached: bool = False) -> Any:
        return NodeInfo(node, unschedulable=True, draining=True)


async def test_after_a_crash_a_draining_node_is_not_done() -> None:
    """The drain's crash check: no job left is not enough while the node is draining."""
    kube: Any = _DrainingNode()
    ctx = ActionContext(
        cluster=ClusterPorts("hpc", kube, agent=None, metrics=None),  # type: ignore[arg-type]
        clock=FakeClock(),
        actor="system",
        reason="test",
    )
    result = await check_drain(ctx, DrainParams(node="gpu042"))
    assert result.state == "not_done"
    assert "draining, not drained" in result.detail
