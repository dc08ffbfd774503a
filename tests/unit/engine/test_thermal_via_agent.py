"""The thermal runbook with GPU actions over the node agent's HTTP API (simulated driver)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from gpubot.agent.api import AgentTokens, create_agent_app
from gpubot.agent.operations import GpuOperations
from gpubot.agent.simulated import SimulatedDriver
from gpubot.backends.agent_address import AgentAddresses, AgentLocation
from gpubot.backends.agent_client import HttpNodeAgent
from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.simulated.scenarios import thermal_runaway
from gpubot.domain.control.agent_tokens import node_token
from gpubot.domain.runbooks.runs import RunStatus

MakeHarness = Any  # the `harness` fixture in conftest.py
THERMAL = (Path(__file__).parents[3] / "runbooks" / "thermal.yaml").read_text()
MASTER = "agent-master-for-tests"
NODE, GPU = "gpu-node-03", 2


def fleet_of_agents(cluster: SimulatedCluster) -> Any:
    """One agent app per node, each holding only its node's tokens. The simulated cluster
    reports one address for every node, so the request goes to the app whose token it is."""
    apps: dict[str, Any] = {}
    for node in cluster.node_names():
        read, mutate = (node_token(master=MASTER, node=node, scope=s) for s in ("read", "mutate"))
        app = create_agent_app(
            GpuOperations(SimulatedDriver(cluster.agent, node=node)),
            tokens=AgentTokens(read=read, mutate=mutate),
            node=node,
        )
        apps[f"Bearer {read}"] = apps[f"Bearer {mutate}"] = app

    async def route(scope: Any, receive: Any, send: Any) -> None:
        await apps[dict(scope["headers"])[b"authorization"].decode()](scope, receive, send)

    return route


def agent_for(cluster: SimulatedCluster) -> HttpNodeAgent:
    return HttpNodeAgent(
        addresses=AgentAddresses(cluster.kube, AgentLocation(cluster="sim")),
        master=MASTER,
        transport=httpx.ASGITransport(app=fleet_of_agents(cluster)),
    )


async def test_thermal_cap_and_revert_through_the_agent_api(harness: MakeHarness) -> None:
    cluster = SimulatedCluster.default()
    agent = agent_for(cluster)
    h = harness(THERMAL, cluster=cluster, agent=agent)
    thermal_runaway(cluster, node=NODE, gpu=GPU, temperature_c=93)
    _plan, run = await h.service.start_command_run(
        runbook="thermal",
        args={"node": NODE, "gpu": str(GPU), "fraction": "0.6"},
        requested_by="U3",
        cluster="sim",
    )
    assert run is not None
    await h.service.wait_idle()
    states = {s.step_id: s for s in await h.store.steps(run.id)}
    # The agent reports the simulated GPU's throttle reasons; the check sees them.
    assert states["check"].output["thermal_throttling"] is True
    assert "sw_thermal_slowdown" in states["check"].output["throttle_reasons"]
    [ask] = h.notifier.of("ask_approval")
    assert "700 W → 420 W" in ask.text
    await h.service.vote(approval_id=ask.approval_id, user="U2", decision="approve")
    assert (await h.run_of(run.id)).status is RunStatus.SUCCEEDED
    events = await h.store.events()
    [cap] = [e for e in events if e.kind == "step.finished" and e.step == "cap"]
    assert (cap.result["previous_w"], cap.result["limit_w"]) == (700.0, 420.0)
    [revert] = [e for e in events if e.kind == "step.finished" and e.step == "revert"]
    assert (revert.result["previous_w"], revert.result["limit_w"]) == (420.0, 700.0)
    assert (await cluster.agent.gpus(node=NODE))[GPU].power_limit_w == 700.0
    await agent.aclose()


async def test_cap_below_the_device_minimum_is_clamped_to_it(harness: MakeHarness) -> None:
    """A GPU whose minimum is above the cap: clamped, so the request stays in range."""
    cluster = SimulatedCluster.default()
    agent = agent_for(cluster)
    h = harness(THERMAL, cluster=cluster, agent=agent)
    thermal_runaway(cluster, node=NODE, gpu=GPU, temperature_c=93)
    _plan, run = await h.service.start_command_run(
        runbook="thermal",
        args={"node": NODE, "gpu": str(GPU), "fraction": "0.1"},
        requested_by="U3",
        cluster="sim",
    )
    assert run is not None
    await h.service.wait_idle()
    [ask] = h.notifier.of("ask_approval")
    assert "→ 200 W" in ask.text
    assert "clamped to the range" in ask.text
    await h.service.vote(approval_id=ask.approval_id, user="U2", decision="approve")
    await h.service.wait_idle()
    [cap] = [e for e in await h.store.events() if e.kind == "step.finished" and e.step == "cap"]
    assert cap.result["limit_w"] == 200.0
    await agent.aclose()


RESTORE_TO = """
name: restore-to
description: set a GPU's power limit through the agent
triggers: [{command: restore-to}]
params:
  node: {type: node}
  gpu: {type: int}
  watts: {type: string}
target: node
steps:
  - id: set
    action: gpu.power_restore
    args: {node: "{{ params.node }}", gpu: "{{ params.gpu }}", watts: "{{ params.watts }}"}
    approval: auto
"""


async def test_a_limit_outside_the_range_fails_the_step_naming_the_range(
    harness: MakeHarness,
) -> None:
    cluster = SimulatedCluster.default()
    agent = agent_for(cluster)
    h = harness(RESTORE_TO, cluster=cluster, agent=agent)
    _plan, run = await h.service.start_command_run(
        runbook="restore-to",
        args={"node": NODE, "gpu": str(GPU), "watts": "900"},
        requested_by="U3",
        cluster="sim",
    )
    assert run is not None
    assert (await h.run_of(run.id)).status is RunStatus.FAILED
    [step] = await h.store.steps(run.id)
    assert step.error == (
        f"node agent on {NODE}: power limit 900 W is outside GPU {GPU}'s range 200-700 W"
    )
    assert (await cluster.agent.gpus(node=NODE))[GPU].power_limit_w == 700.0
    await agent.aclose()
