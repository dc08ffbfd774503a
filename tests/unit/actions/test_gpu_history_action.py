"""gpu.history: which GPU an XID is recorded against (the agent's, never the alert's word
alone), once per incident, never in a dry run; its escalation output."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gpubot.actions.base import ActionContext
from gpubot.actions.gpu_ledger import HistoryParams, plan_history, run_history
from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.store import SqlStore, open_store
from gpubot.engine.clock import FakeClock

NODE = "gpu-node-07"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlStore]:
    s = open_store(f"sqlite:///{tmp_path / 'ledger.db'}")
    yield s
    await s.close()


def ctx(sim: SimulatedCluster, store: SqlStore, **over: Any) -> ActionContext:
    fields: dict[str, Any] = {
        "cluster": sim.ports(),
        "clock": FakeClock(),
        "actor": "system",
        "reason": "test",
        "ledger": store,
        "incident_id": "inc-00000000a1",
        "run_id": "run-00000000a1",
    }
    return ActionContext(**{**fields, **over})


def params(**over: Any) -> HistoryParams:
    return HistoryParams.model_validate({"node": NODE, "xid": "79", **over})


async def test_an_alert_without_uuid_records_the_gpu_at_its_index(store: SqlStore) -> None:
    """No UUID label: the agent's GPU at the alert's index, with its bus id."""
    sim = SimulatedCluster.default()
    gpu3 = (await sim.agent.gpus(node=NODE))[3]
    out = await run_history(ctx(sim, store), params(gpu="3"))
    assert (out["uuid"], out["pci_bus_id"], out["escalation"]) == (
        gpu3.uuid,
        "0000:48:00.0",
        "reset",
    )
    [event] = await store.gpu_history(node=NODE)
    assert (event.uuid, event.gpu_index, event.xid, event.incident_id, event.run_id) == (
        gpu3.uuid,
        3,
        79,
        "inc-00000000a1",
        "run-00000000a1",
    )


async def test_a_uuid_from_another_node_is_not_believed(store: SqlStore) -> None:
    """The alert names GPU 2 of this node but the UUID of a GPU on another node: the GPU
    recorded is this node's GPU 2 (the note says so); the other GPU's history stays empty."""
    sim = SimulatedCluster.default()
    elsewhere = (await sim.agent.gpus(node="gpu-node-01"))[0].uuid
    here = (await sim.agent.gpus(node=NODE))[2].uuid
    out = await run_history(ctx(sim, store), params(gpu="2", uuid=elsewhere))
    assert out["uuid"] == here
    [event] = await store.gpu_history(node=NODE)
    assert event.uuid == here
    assert f"the alert's UUID {elsewhere} is not on {NODE}" in event.detail
    assert await store.gpu_history(uuid=elsewhere) == []


async def test_the_alerts_uuid_wins_over_its_index_when_the_agent_lists_it(
    store: SqlStore,
) -> None:
    """Label UUID of this node's GPU 5 with index 1 (indexes can shift): GPU 5 it is."""
    sim = SimulatedCluster.default()
    gpu5 = (await sim.agent.gpus(node=NODE))[5]
    out = await run_history(ctx(sim, store), params(gpu="1", uuid=gpu5.uuid))
    assert (out["uuid"], out["gpu"]) == (gpu5.uuid, 5)


@pytest.mark.parametrize("labels", [{}, {"uuid": "<!channel>", "gpu": ""}, {"gpu": "9"}])
async def test_a_gpu_that_cannot_be_named_is_not_recorded(
    store: SqlStore, labels: dict[str, str]
) -> None:
    """No index and no UUID, a hostile UUID label, or an index the node lacks: nothing is
    recorded, and the run goes on with the default remedy and says why."""
    sim = SimulatedCluster.default()
    out = await run_history(ctx(sim, store), params(**labels))
    assert out["identified"] is False
    assert out["escalation"] == "reset"
    assert "could not be identified" in out["reason"]
    assert await store.gpu_history(node=NODE) == []


async def test_recorded_once_per_incident_and_never_in_a_dry_run_or_plan(
    store: SqlStore,
) -> None:
    """A step run again after a restart finds its XID there; a dry run and a plan read the
    history (and say what they would decide) but write nothing."""
    sim = SimulatedCluster.default()
    await run_history(ctx(sim, store, dry_run=True), params(gpu="3"))
    planned = await plan_history(ctx(sim, store), params(gpu="3"))
    assert planned.changes is False
    assert planned.facts["escalation"] == "reset"
    assert await store.gpu_history(node=NODE) == []
    first = await run_history(ctx(sim, store), params(gpu="3"))
    again = await run_history(ctx(sim, store), params(gpu="3"))
    assert (first["recorded"], again["recorded"]) == (True, False)
    assert len(await store.gpu_history(node=NODE)) == 1


async def test_a_node_the_agent_does_not_know_leaves_the_run_going(store: SqlStore) -> None:
    """An XID for a node the cluster lacks (or an agent that cannot be read): the step
    succeeds with the default remedy and says why; a routed XID run does not fail on it."""
    sim = SimulatedCluster.default()
    out = await run_history(
        ctx(sim, store), params(node="storm-node-01", gpu="0", remedy="route", xid="13")
    )
    assert out["identified"] is False
    assert out["escalation"] == "check_application"
    assert "the node agent could not be read" in out["reason"]
    assert await store.gpu_history(node="storm-node-01") == []
