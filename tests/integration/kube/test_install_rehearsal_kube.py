"""Install rehearsal on a real API server with --authorization-mode=RBAC: the chart rendered
by the Helm engine and applied object by object, a GPU node with the agent pod bound to it,
the bot's pod, and tokens the API server binds to those pods. Then, with nothing provisioned
by hand: the bot knows node A's agent by its token (and refuses it for node B), the agent
takes actions from the bot's token only, and RBAC refuses none of the reviews and pod reads
the chart's accounts need."""

from __future__ import annotations

import json
import ssl
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from install_rehearsal import Install, RecordingTransport, Sent, allowed, install, no_env
from kube_cluster import Cluster

from gpubot.agent.api import create_agent_app
from gpubot.agent.bot_identity import BotServiceAccount
from gpubot.agent.driver import XidEvent
from gpubot.agent.operations import GpuOperations
from gpubot.agent.simulated import SimulatedDriver
from gpubot.agent.token_review import HttpTokenReviewer
from gpubot.agent.xid_watcher import xid_alert
from gpubot.backends.bot_tokens import PerNodeBotTokens
from gpubot.backends.kube.token_review import KubeTokenReviewer
from gpubot.backends.simulated import SimulatedCluster
from gpubot.config import load_settings
from gpubot.domain.control.token_reviews import node_audience, service_account_user
from gpubot.web.agent_identity import ServiceAccountAgents, Unknown
from gpubot.web.app import create_app
from gpubot.wiring import agent_event_auth, build_app

GPU_LABELS = {"nvidia.com/gpu.present": "true"}


@pytest.fixture
def installed(rbac_cluster: Cluster, tmp_path: Path) -> Install:
    c = rbac_cluster
    done = install(c, tmp_path)
    node_a = c.add_node("gpu-a", labels=GPU_LABELS)
    node_b = c.add_node("gpu-b", labels=GPU_LABELS)
    cpu = c.add_node("cpu", gpus=0)
    done.pod("a", done.agent_pod_spec, node=node_a, owner=done.agent_daemonset)
    done.pod("b", done.agent_pod_spec, node=node_b, owner=done.agent_daemonset)
    done.pod("bot", dict(done.rendered.bot["spec"]["template"]), node=cpu)
    return done


def xid_body(node: str, cluster: str) -> dict[str, Any]:
    event = XidEvent(gpu=3, uuid="GPU-3", xid=79, at=datetime(2026, 11, 28, 5, tzinfo=UTC))
    return xid_alert(event, node=node, cluster=cluster, window_s=300)


def test_the_chart_applies_whole_under_rbac(installed: Install) -> None:
    kinds = {a.split("/")[0] for a in installed.applied}
    assert {"Deployment", "DaemonSet", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"} <= (
        kinds
    )
    assert "Secret" not in kinds  # nothing generated; no token values given
    assert not any(v.get("hostPath") for v in installed.agent_pod_spec["spec"]["volumes"])


async def test_the_bot_knows_node_as_agent_by_its_token_and_refuses_it_for_node_b(
    installed: Install,
) -> None:
    """The bot's side as the chart configures it: its own API token (the chart's ClusterRole),
    the agents' account and audience from the rendered config."""
    i, c = installed, installed.c
    agent_cfg = i.config["clusters"][0]["agent"]
    bot_api = i.token("bot", i.bot_service_account)
    reviewer = KubeTokenReviewer(c.client(bot_api))  # records into c.calls
    agents = ServiceAccountAgents(
        cluster=i.config["clusters"][0]["name"],
        reviewer=reviewer,
        pods=reviewer,
        audience=agent_cfg["audience"],
        namespace=agent_cfg["namespace"],
        service_account=agent_cfg["service_account"],
    )
    token_a = i.token("a", i.agent_service_account, audience=i.audience)
    token_b = i.token("b", i.agent_service_account, audience=i.audience)
    node_a, node_b = c.name("gpu-a"), c.name("gpu-b")
    assert await agents.node_of(token_a) == node_a
    assert await agents.node_of(token_b) == node_b
    # Not an agent's: the bot's own identity token, the agent's API token (other audience).
    bot_identity = i.token("bot", i.bot_service_account, audience=i.audience)
    assert await agents.node_of(bot_identity) == Unknown(
        403,
        f"system:serviceaccount:{i.namespace}:{i.bot_service_account} is not the agents' "
        "ServiceAccount",
    )
    agent_api = i.token("a", i.agent_service_account)
    refused = await agents.node_of(agent_api)
    assert isinstance(refused, Unknown)
    assert refused.status == 401
    denied = [f"{x.method} {x.path} {x.status}" for x in c.calls if x.status in (401, 403)]
    assert denied == [], denied
    assert c.calls_of("POST", "/apis/authentication.k8s.io/v1/tokenreviews")
    assert c.calls_of("GET", f"/api/v1/namespaces/{i.namespace}/pods/")


def agent_app(i: Install, node: str, sent: list[Sent]) -> tuple[Any, HttpTokenReviewer]:
    """`node`'s agent as the chart runs it: its API token (bound to its pod) re-read from a
    file, the API server's CA, the bot's account and audience from its environment."""
    env = i.agent_env
    ca = ssl.create_default_context(cafile=str(i.c.plane.ca))
    role = "a" if node == i.c.name("gpu-a") else "b"
    reviewer = HttpTokenReviewer(
        api_url=i.c.plane.url,
        token_file=i.file(f"agent-{role}-api-token", i.token(role, i.agent_service_account)),
        transport=RecordingTransport(httpx.AsyncHTTPTransport(verify=ca), sent),
    )
    audience = env["GPUBOT_AGENT__AUDIENCE"]
    if env["GPUBOT_AGENT__BOT_AUDIENCE"] == "per_node":
        audience = node_audience(audience, node)
    callers = BotServiceAccount(
        reviewer=reviewer, audience=audience, username=env["GPUBOT_AGENT__BOT_SERVICE_ACCOUNT"]
    )
    driver = SimulatedDriver(SimulatedCluster.default().agent, node="gpu-node-12")
    return create_agent_app(GpuOperations(driver), tokens=callers, node=node), reviewer


async def test_the_agent_takes_actions_from_the_bots_token_for_its_node_only(
    installed: Install,
) -> None:
    """The bot's tokens come from the TokenRequest API, as the bot (its chart Role), one per
    node and bound to its pod. Node A's agent takes A's; it refuses B's (node B's agent
    replaying what it received), every agent's own token, a workload's, and API tokens."""
    i, c = installed, installed.c
    node_a, node_b = c.name("gpu-a"), c.name("gpu-b")
    bot_kube = KubeTokenReviewer(c.client(i.token("bot", i.bot_service_account)))
    agent_cfg = i.config["clusters"][0]["agent"]
    bot_tokens = PerNodeBotTokens(
        bot_kube,
        namespace=agent_cfg["namespace"],
        service_account=agent_cfg["bot_service_account"],
        audience=agent_cfg["audience"],
        pod=i.pods["bot"],
    )
    audience_a = node_audience(i.audience, node_a)

    def minted(account: str, audience: str) -> str:
        """A token an attacker could not get from the API server: another account's, for
        node A's audience (made here as the admin)."""
        spec = {"audiences": [audience], "expirationSeconds": 600}
        made = c.core.create_namespaced_service_account_token(account, i.namespace, {"spec": spec})
        return str(made.status.token)

    tokens = {
        "the bot's token for node B (node B's agent replaying it)": (401, await bot_tokens(node_b)),
        "the bot's projected token (the shared audience)": (
            401,
            i.token("bot", i.bot_service_account, audience=i.audience),
        ),
        "node B's agent's own token": (
            401,
            i.token("b", i.agent_service_account, audience=i.audience),
        ),
        "the bot's API token": (401, i.token("bot", i.bot_service_account)),
        "the admin's static token": (401, c.plane.token),
        "node A's agent's account, for A's audience": (
            403,
            minted(i.agent_service_account, audience_a),
        ),
        "a workload's account, for A's audience": (403, minted("default", audience_a)),
    }
    sent: list[Sent] = []
    app, reviewer = agent_app(i, node_a, sent)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://agent"
    ) as client:
        for why, (status, token) in tokens.items():
            r = await client.post(
                "/v1/gpus/6/reset",
                json={"dry_run": True},
                headers={"authorization": f"Bearer {token}"},
            )
            assert r.status_code == status, (why, r.text)
        mine = await bot_tokens(node_a)
        r = await client.post(
            "/v1/gpus/6/reset", json={"dry_run": True}, headers={"authorization": f"Bearer {mine}"}
        )
        assert r.status_code == 200, r.text
        r = await client.get("/v1/gpus", headers={"authorization": f"Bearer {mine}"})
        assert r.status_code == 200, r.text
    await reviewer.aclose()
    # The agent's TokenReviews, as its own account under the chart's RBAC: none refused;
    # the bot's TokenRequests, as its account under the chart's Role: none refused.
    assert sent
    assert {(s.method, s.path) for s in sent} == {
        ("POST", "/apis/authentication.k8s.io/v1/tokenreviews")
    }
    assert [s for s in sent if s.status not in (200, 201)] == []
    requested = c.calls_of("POST", f"/serviceaccounts/{i.bot_service_account}/token")
    assert len(requested) == 2  # one per node, then reused
    assert [x for x in c.calls if x.status in (401, 403)] == []


def test_rbac_grants_each_account_what_it_needs_and_the_agent_nothing_more(
    installed: Install,
) -> None:
    i, c = installed, installed.c
    bot = service_account_user(namespace=i.namespace, name=i.bot_service_account)
    agent = service_account_user(namespace=i.namespace, name=i.agent_service_account)
    review = {"verb": "create", "group": "authentication.k8s.io", "resource": "tokenreviews"}
    assert allowed(c, bot, **review)
    assert allowed(c, agent, **review)
    assert allowed(c, bot, verb="get", group="", resource="pods", ns=i.namespace)
    own_token = {"verb": "create", "group": "", "resource": "serviceaccounts", "sub": "token"}
    assert allowed(c, bot, **own_token, ns=i.namespace, name=i.bot_service_account)
    # … for its own account only: not the agents', not another namespace's.
    assert not allowed(c, bot, **own_token, ns=i.namespace, name=i.agent_service_account)
    assert not allowed(c, bot, **own_token, ns="default", name=i.bot_service_account)
    for verb, resource in (("get", "pods"), ("list", "nodes"), ("get", "secrets")):
        assert not allowed(c, agent, verb=verb, group="", resource=resource, ns=i.namespace)
    assert not allowed(c, agent, verb="create", group="", resource="serviceaccounts/token")


async def test_the_served_bot_takes_node_as_xid_from_its_agent_only(
    installed: Install, tmp_path: Path
) -> None:
    """The bot's HTTP app as `gpubot serve` wires it from the chart's rendered config (with a
    kubeconfig for the bot's token instead of the in-cluster account): node A's agent token
    posts node A's XID 79 and it is stored; for node B, or naming a pod, it is refused."""
    i, c = installed, installed.c
    config = i.config
    cluster = config["clusters"][0]
    kubeconfig = c.plane.kubeconfig_for(
        tmp_path / "bot-kubeconfig", token=i.token("bot", i.bot_service_account)
    )
    cluster.update(in_cluster=False, kubeconfig=str(kubeconfig))
    cluster["agent"]["identity_token_file"] = str(
        i.file("bot-identity", i.token("bot", i.bot_service_account, audience=i.audience))
    )
    config.update(
        store={"url": f"sqlite:///{tmp_path}/bot.db"},
        runbooks={"builtin": False},
        slack={"mode": "off"},
    )
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    with no_env():
        settings = load_settings(path)
        app = build_app(settings)
        web = create_app(app.service, agent_auth=agent_event_auth(settings), metrics=app.metrics)
    node_a, node_b = c.name("gpu-a"), c.name("gpu-b")
    token_a = i.token("a", i.agent_service_account, audience=i.audience)
    name = cluster["name"]
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=web), base_url="http://bot"
        ) as client:

            async def post(body: dict[str, Any]) -> httpx.Response:
                return await client.post(
                    "/agent/events", json=body, headers={"authorization": f"Bearer {token_a}"}
                )

            assert (await post(xid_body(node_b, name))).status_code == 403
            forged = xid_body(node_a, name)
            forged["alerts"][0]["labels"] |= {"pod": "trainer-0", "namespace": "research"}
            assert (await post(forged)).status_code == 403
            assert (await post(xid_body(node_a, "another-cluster"))).status_code == 403
            r = await post(xid_body(node_a, name))
            assert r.status_code == 200, r.text
        await app.service.wait_idle()
        incidents = await app.store.list_incidents()
        assert [x.node for x in incidents] == [node_a]
    finally:
        await app.aclose()


QUARANTINE = """
name: xid-quarantine
description: cordon the node an XID 79 names (the rehearsal's stand-in for xid79's quarantine)
triggers:
  - alertname: GPUXidError
params:
  node: {type: node, default: "{{ alert.labels.Hostname }}"}
target: node
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
"""


async def test_pools_are_chosen_by_real_node_labels(installed: Install, tmp_path: Path) -> None:
    """Node A carries gpubot.io/pool=canary on the API server, and policy.pools makes that an
    observe pool: its XID 79 cordons nothing (the step is recorded as what it would do, and
    the plan names the label that matched). Node B, in no pool, is cordoned: same alert, same
    runbook, the bot's own RBAC."""
    i, c = installed, installed.c
    node_a, node_b = c.name("gpu-a"), c.name("gpu-b")
    c.core.patch_node(node_a, {"metadata": {"labels": {"gpubot.io/pool": "canary"}}})
    config = i.config
    cluster = config["clusters"][0]
    kubeconfig = c.plane.kubeconfig_for(
        tmp_path / "bot-kubeconfig", token=i.token("bot", i.bot_service_account)
    )
    cluster.update(in_cluster=False, kubeconfig=str(kubeconfig))
    cluster["agent"]["identity_token_file"] = str(
        i.file("bot-identity", i.token("bot", i.bot_service_account, audience=i.audience))
    )
    runbooks = tmp_path / "runbooks"
    runbooks.mkdir()
    (runbooks / "xid-quarantine.yaml").write_text(QUARANTINE)
    config.update(
        store={"url": f"sqlite:///{tmp_path}/bot.db"},
        runbooks={"builtin": False, "dirs": [str(runbooks)]},
        slack={"mode": "off"},
        policy={
            "blast_radius": {"max_cordoned_count": 2, "max_cordoned_fraction": 1.0},
            "pools": [{"name": "canary", "mode": "observe", "match": {"gpubot.io/pool": "canary"}}],
        },
    )
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    with no_env():
        settings = load_settings(path)
        app = build_app(settings)
        web = create_app(app.service, agent_auth=agent_event_auth(settings), metrics=app.metrics)
    name = cluster["name"]
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=web), base_url="http://bot"
        ) as client:
            for node, role in ((node_a, "a"), (node_b, "b")):
                token = i.token(role, i.agent_service_account, audience=i.audience)
                r = await client.post(
                    "/agent/events",
                    json=xid_body(node, name),
                    headers={"authorization": f"Bearer {token}"},
                )
                assert r.status_code == 200, r.text
        await app.service.wait_idle()
        runs = {r.target: r for r in await app.store.list_runs()}
        assert sorted(runs) == sorted([node_a, node_b])
        observed = await app.store.events(run_id=runs[node_a].id)
        [would] = [e for e in observed if e.kind == "step.observed"]
        assert would.step == "cordon"
        assert "pool canary (observe)" in str(would.result["pool"])
        assert not [e for e in observed if e.kind == "step.started"]
        assert not c.core.read_node(node_a).spec.unschedulable
        assert c.core.read_node(node_b).spec.unschedulable
        # Each run's plan named its pool and the real label that chose it.
        planned_a = json.dumps(runs[node_a].context["pool"])
        assert "label gpubot.io/pool=canary matched" in planned_a, planned_a
        assert "no pool matched" in json.dumps(runs[node_b].context["pool"])
    finally:
        await app.aclose()
