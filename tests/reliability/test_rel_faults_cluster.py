"""Cluster-side dependencies that fail: the Kubernetes API (500s, hung requests), Prometheus,
the node agent. gpubot retries with backoff, says so in the incident thread, and the run
finishes once the dependency is back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kube_standin import KubeStandin, client_for, serve
from reliability_engine import HookClock, make_bot, serve_asgi
from reliability_fuzz import error_log
from reliability_procs import free_port

from gpubot.agent.api import AgentTokens, create_agent_app
from gpubot.agent.operations import GpuOperations
from gpubot.agent.simulated import SimulatedDriver
from gpubot.backends.agent_address import AgentAddresses, AgentLocation
from gpubot.backends.agent_client import HttpNodeAgent
from gpubot.backends.kube import KubernetesKubeApi
from gpubot.backends.prometheus import PrometheusMetrics
from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.simulated.scenarios import inject_xid, thermal_runaway
from gpubot.backends.store import open_store
from gpubot.domain.control.agent_tokens import node_token
from gpubot.errors import TemporaryStepError

NODE = "gpu-node-07"

QUARANTINE = """
name: quarantine
description: Cordon and taint the node of an XID alert; the API server may fail for a while.
triggers: [{alertname: GPUXidError}]
params: {node: {type: node, default: "{{ alert.labels.Hostname }}"}}
target: node
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto,
     retries: 3}
  - {id: taint, action: node.taint, approval: auto, retries: 3,
     args: {node: "{{ params.node }}", key: gpubot.io/xid, value: "79"}}
"""


@pytest.fixture
def standin() -> Iterator[KubeStandin]:
    with serve(KubeStandin()) as s:
        for n in range(1, 17):
            s.add_node(f"gpu-node-{n:02d}")
        yield s


@pytest.fixture
async def kube(standin: KubeStandin) -> AsyncIterator[KubernetesKubeApi]:
    api = KubernetesKubeApi(client_for(standin), request_timeout=0.5)
    yield api
    api.close()


async def test_kubernetes_api_500s_are_retried_until_the_step_succeeds(
    tmp_path: Path, standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    """The API server answers the cordon with 500 twice: the step waits (5 s each, the
    adapter's delay), says so in the thread, tries again, and the run finishes with the
    node cordoned and tainted."""
    standin.fail("PATCH", rf"^/api/v1/nodes/{NODE}$", times=2, code=500)
    sim = SimulatedCluster.default()
    clock = HookClock()
    bot = make_bot(
        store=open_store(f"sqlite:///{tmp_path / 'db.sqlite'}"),
        kube=kube,
        agent=sim.agent,
        metrics=sim.metrics,
        runbook=QUARANTINE,
        clock=clock,
    )
    with error_log() as errors:
        await bot.alert()
        run = await bot.only_run()
    assert run.status.value == "succeeded", run.note
    assert clock.slept == [5.0, 5.0]
    node = standin.nodes[NODE]
    assert node["spec"]["unschedulable"] is True
    assert {"key": "gpubot.io/xid", "value": "79", "effect": "NoSchedule"} in node["spec"]["taints"]
    assert "attempt 1 of 4 failed: API server error on patch" in bot.thread()
    assert "(500)" in bot.thread()
    assert "retrying in 5s" in bot.thread()
    retries = [e for e in await bot.store.events() if e.kind == "step.retry"]
    assert [e.step for e in retries] == ["cordon", "cordon"]
    assert errors.take() == []
    await bot.store.close()


async def test_hung_kubernetes_api_request_times_out_and_is_retried(
    tmp_path: Path, standin: KubeStandin, kube: KubernetesKubeApi
) -> None:
    """The API server stops answering writes: each request gives up after the adapter's
    request timeout (not the step's, which is a minute), the step retries, and once the
    server answers again the run finishes."""
    standin.latency["patch"] = 1.5  # longer than the adapter's 0.5 s request timeout
    sim = SimulatedCluster.default()
    clock = HookClock({1: lambda: standin.latency.clear()})  # the server recovers meanwhile
    bot = make_bot(
        store=open_store(f"sqlite:///{tmp_path / 'db.sqlite'}"),
        kube=kube,
        agent=sim.agent,
        metrics=sim.metrics,
        runbook=QUARANTINE,
        clock=clock,
    )
    await bot.alert()
    run = await bot.only_run()
    assert run.status.value == "succeeded", run.note
    [retry] = [e for e in await bot.store.events() if e.kind == "step.retry"]
    assert retry.step == "cordon"
    assert "cannot reach the API server (patch nodes" in retry.result["error"]
    assert "timed out" in retry.result["error"].lower()
    steps = {s.step_id: s for s in await bot.store.steps(run.id)}
    assert steps["cordon"].attempts == 2
    assert standin.nodes[NODE]["spec"]["unschedulable"] is True
    assert "attempt 1 of 4 failed: cannot reach the API server" in bot.thread()
    await bot.store.close()


HEAT = """
name: heat
description: Read a hot GPU (agent and Prometheus) and tell the thread.
triggers: [{alertname: GPUXidError}]
params: {node: {type: node, default: "{{ alert.labels.Hostname }}"}}
steps:
  - {id: check, action: gpu.thermal_check, approval: auto,
     args: {node: "{{ params.node }}", gpu: "{{ alert.labels.gpu }}"}}
  - {id: tell, action: notify, approval: auto,
     args: {message: "{{ params.node }} GPU at {{ steps.check.output.temperature_c }} C"}}
"""


async def test_prometheus_down_the_agent_reading_still_drives_the_run(tmp_path: Path) -> None:
    """Prometheus refuses connections: a query fails fast with one line naming the URL (a
    temporary error), and the thermal check goes on with the node agent's reading."""
    sim = SimulatedCluster.default()
    thermal_runaway(sim, node=NODE, gpu=3, temperature_c=93)
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    prometheus = PrometheusMetrics(url=url, timeout_seconds=2, retries=1, backoff_seconds=0.01)
    with pytest.raises(TemporaryStepError) as down:
        await asyncio.wait_for(prometheus.query(promql="up"), timeout=10)
    assert url in str(down.value)
    assert "\n" not in str(down.value)

    bot = make_bot(
        store=open_store(f"sqlite:///{tmp_path / 'db.sqlite'}"),
        kube=sim.kube,
        agent=sim.agent,
        metrics=prometheus,
        runbook=HEAT,
    )
    with error_log() as errors:
        await bot.alert()
        run = await bot.only_run()
    assert run.status.value == "succeeded", run.note
    check = {s.step_id: s for s in await bot.store.steps(run.id)}["check"]
    assert check.output["prometheus_temperature_c"] is None
    assert check.output["temperature_c"] == 93
    assert check.output["hot"] is True
    assert f"{NODE} GPU at 93 C" in bot.thread()
    assert errors.take() == []
    await bot.store.close()


AGENT_CHECK = """
name: agent-check
description: Read the GPUs through the node agent (it may be down a while), then quarantine.
triggers: [{alertname: GPUXidError}]
params: {node: {type: node, default: "{{ alert.labels.Hostname }}"}}
target: node
steps:
  - {id: check, action: node.gpu_health, args: {node: "{{ params.node }}"}, approval: auto,
     retries: 4}
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto,
     when: "not steps.check.output.healthy"}
"""


async def test_unreachable_agent_is_retried_and_the_run_resumes(tmp_path: Path) -> None:
    """The node agent refuses connections: the client retries, the step waits and says so in
    the thread; the agent comes up during the second wait, and the run reads the lost GPU
    and quarantines the node."""
    sim = SimulatedCluster.default()
    inject_xid(sim, node=NODE, gpu=3)
    port, master = free_port(), "agent-master"
    tokens = AgentTokens(
        read=node_token(master=master, node=NODE, scope="read"),
        mutate=node_token(master=master, node=NODE, scope="mutate"),
    )
    agent_app = create_agent_app(
        GpuOperations(SimulatedDriver(sim.agent, node=NODE)), tokens=tokens, node=NODE
    )
    up = []

    def agent_comes_up() -> None:
        up.append(serve_asgi(agent_app, port))
        up[-1].__enter__()

    # The simulated cluster reports 127.0.0.1 for every node; the agent listens on `port`.
    agent = HttpNodeAgent(
        addresses=AgentAddresses(sim.kube, AgentLocation(cluster="sim", port=port)),
        master=master,
        connect_retries=1,
        retry_delay_s=0.01,
        timeout_s=5,
    )
    clock = HookClock({2: agent_comes_up})
    bot = make_bot(
        store=open_store(f"sqlite:///{tmp_path / 'db.sqlite'}"),
        kube=sim.kube,
        agent=agent,
        metrics=sim.metrics,
        runbook=AGENT_CHECK,
        clock=clock,
    )
    try:
        with error_log() as errors:
            await bot.alert()
            run = await bot.only_run()
        assert run.status.value == "succeeded", run.note
        assert clock.slept == [5.0, 5.0]
        steps = {s.step_id: s for s in await bot.store.steps(run.id)}
        assert steps["check"].attempts == 3
        assert steps["check"].output["lost_gpus"] == [3]
        assert steps["cordon"].status.value == "succeeded"
        assert (await sim.kube.get_node(node=NODE)).unschedulable
        assert f"node agent on {NODE} unreachable" in bot.thread()
        assert "retrying in 5s" in bot.thread()
        assert errors.take() == []
    finally:
        await agent.aclose()
        for server in up:
            server.__exit__(None, None, None)
        await bot.store.close()
