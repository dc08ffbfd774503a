"""The install rehearsal end to end, with real processes: `gpubot serve` and `gpubot agent
--driver simulated`, each configured as the chart configures it and holding only the tokens
the API server bound to its pod (files, as the kubelet mounts them), on a real API server
with RBAC on. An XID 79 on node gpu-node-07's GPU goes agent → bot (the agent's token, its
node from its pod), and the bot's runbook reads the GPUs through that agent (the bot's
token, checked by the agent with TokenReview) and cordons and taints the node (the chart's
ClusterRole)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from install_rehearsal import REPO, Install, install
from kube_cluster import Cluster, Obj

if str(REPO / "tests" / "reliability") not in sys.path:
    sys.path.insert(0, str(REPO / "tests" / "reliability"))

from reliability_procs import Procs, answers, clean_env, free_port, wait_until

from gpubot.backends.simulated import SimulatedCluster, inject_xid
from gpubot.backends.store import open_store

NODE = "gpu-node-07"  # a node the simulated agent knows; the test's own on this server


@pytest.fixture
def procs() -> Iterator[Procs]:
    p = Procs()
    try:
        yield p
    finally:
        p.stop()


def _gpu_node(c: Cluster, name: str) -> None:
    """A GPU node under the simulated agent's node name (the server is this session's own)."""
    c.core.create_node(
        {
            "metadata": {
                "name": name,
                "labels": {"nvidia.com/gpu.present": "true", "kubernetes.io/hostname": name},
            },
            "status": {
                "capacity": {"nvidia.com/gpu": "8", "cpu": "96", "pods": "110"},
                "allocatable": {"nvidia.com/gpu": "8", "cpu": "95", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            },
        }
    )
    c.nodes.append(name)
    c.core.patch_node(name, {"spec": {"taints": []}}, _content_type="application/merge-patch+json")


def _write(path: Path, data: Obj) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def test_xid79_goes_agent_to_bot_to_agent_and_api_with_pod_bound_tokens_only(
    rbac_cluster: Cluster, tmp_path: Path, procs: Procs
) -> None:
    c = rbac_cluster
    i: Install = install(c, tmp_path)
    _gpu_node(c, NODE)
    cpu = c.add_node("cpu", gpus=0)
    agent_pod = i.pod("a", i.agent_pod_spec, node=NODE, owner=i.agent_daemonset)
    i.pod("bot", dict(i.rendered.bot["spec"]["template"]), node=cpu)
    # The agent pod's address, as the CNI would report it: here, loopback.
    c.core.patch_namespaced_pod_status(
        agent_pod, i.namespace, {"status": {"podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}]}}
    )
    agent_port, bot_port = free_port(), free_port()
    state = tmp_path / "sim-state.json"
    sim = SimulatedCluster.default(name="default", state_path=state)

    # The agent: the chart's environment, made a file; its tokens bound to its pod.
    env = i.agent_env
    agent_config = {
        "slack": {"mode": "off"},
        "clusters": [{"name": "default", "backend": "simulated", "state_file": str(state)}],
        "agent": {
            "identity": env["GPUBOT_AGENT__IDENTITY"],
            "audience": env["GPUBOT_AGENT__AUDIENCE"],
            "bot_service_account": env["GPUBOT_AGENT__BOT_SERVICE_ACCOUNT"],
            "bot_audience": env["GPUBOT_AGENT__BOT_AUDIENCE"],
            "cluster": env["GPUBOT_AGENT__CLUSTER"],
            "identity_token_file": str(
                i.file("agent-identity", i.token("a", i.agent_service_account, audience=i.audience))
            ),
            "api_url": c.plane.url,
            "api_token_file": str(i.file("agent-api", i.token("a", i.agent_service_account))),
            "api_ca_file": str(c.plane.ca),
            "bot_url": f"http://127.0.0.1:{bot_port}",
            "listen": f"127.0.0.1:{agent_port}",
        },
    }
    agent = procs.spawn(
        [
            sys.executable,
            "-m",
            "gpubot.cli",
            "agent",
            "--driver",
            "simulated",
            "--node",
            NODE,
            "--config",
            str(_write(tmp_path / "agent.yaml", agent_config)),
        ],
        log=tmp_path / "agent.log",
        cwd=tmp_path,
        env=clean_env(),
    )
    # The bot: the chart's rendered config, with a kubeconfig for its pod-bound API token.
    config = i.config
    cluster = config["clusters"][0]
    kubeconfig = c.plane.kubeconfig_for(
        tmp_path / "bot-kubeconfig", token=i.token("bot", i.bot_service_account)
    )
    cluster.update(in_cluster=False, kubeconfig=str(kubeconfig))
    # The bot requests its tokens for the agents itself (one per node, bound to its pod).
    cluster["agent"].update(port=agent_port)
    db = tmp_path / "bot.db"
    config.update(store={"url": f"sqlite:///{db}"}, slack={"mode": "off"})
    bot = procs.spawn(
        [
            sys.executable,
            "-m",
            "gpubot.cli",
            "serve",
            "--config",
            str(_write(tmp_path / "bot.yaml", config)),
            "--port",
            str(bot_port),
        ],
        log=tmp_path / "bot.log",
        cwd=tmp_path,
        env=clean_env(GPUBOT_POD_NAME=i.pods["bot"][0], GPUBOT_POD_UID=i.pods["bot"][1]),
    )
    for proc, log, port in ((agent, "agent.log", agent_port), (bot, "bot.log", bot_port)):
        url = f"http://127.0.0.1:{port}/healthz"
        wait_until(lambda url=url: answers(url), url, proc=proc, output=tmp_path / log)  # type: ignore[misc]
    # Nobody else gets in: the agent refuses a call without the bot's token.
    r = httpx.get(f"http://127.0.0.1:{agent_port}/v1/gpus", headers={"authorization": "Bearer x"})
    assert r.status_code == 401

    inject_xid(sim, node=NODE, gpu=3)  # NVML reports XID 79; the agent's watcher sees it

    def quarantined() -> bool:
        node = c.core.read_node(NODE)
        taints = [t.key for t in node.spec.taints or []]
        return bool(node.spec.unschedulable) and "gpubot.io/xid" in taints

    try:
        wait_until(quarantined, f"{NODE} cordoned and tainted by the bot")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{procs.tail()}") from None
    procs.stop()

    async def recorded() -> tuple[list[str], dict[str, Any]]:
        store = open_store(f"sqlite:///{db}")
        try:
            incidents = await store.list_incidents()
            [run] = await store.list_runs()
            steps = {s.step_id: s for s in await store.steps(run.id)}
            return [x.node or "" for x in incidents], dict(steps["check"].output)
        finally:
            await store.close()

    nodes, check = asyncio.run(recorded())
    assert nodes == [NODE]
    # The runbook read the GPUs through node gpu-node-07's agent, with the bot's token.
    assert check["lost_gpus"] == [3]
    assert check["xid_errors"] == {"3": [79]}
    bot_log = (tmp_path / "bot.log").read_text()
    agent_log = (tmp_path / "agent.log").read_text()
    # The bot took the event at once; the one refusal is the junk token's above.
    assert agent_log.count('"event": "agent.xid_forwarded"') == 1, agent_log[-3000:]
    assert agent_log.count('"event": "agent.refused"') == 1, agent_log[-3000:]
    assert '"event": "agent.xid_failed"' not in agent_log
    # The agent pod is its DaemonSet's: the drain plan leaves it alone.
    assert f"{i.namespace}/agent-a" not in bot_log
    for log in (bot_log, agent_log):
        assert "Traceback" not in log, log[-3000:]
