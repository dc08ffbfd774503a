"""POST /agent/events with ServiceAccount tokens: the node is the one the token's pod is bound
to (TokenReview, then the Pod from the API server), and an agent posts XID alerts of that
node's GPUs only. Every refusal stores nothing and is counted by kind."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from gpubot.agent.driver import XidEvent
from gpubot.agent.xid_watcher import xid_alert
from gpubot.backends.fake_identity import FakeTokenReviews
from gpubot.domain.incidents.agent_events import AGENT_EVENT_LABELS
from gpubot.ports import PodPlacement
from gpubot.web.agent_identity import AgentEventAuth, ServiceAccountAgents
from gpubot.web.app import create_app
from gpubot.web.metrics import WebMetrics

MakeHarness = Any  # tests/unit/conftest.py's `harness`
RUNBOOK = """
name: quarantine
description: cordon a node an alert names
triggers:
  - alertname: GPUXidError
  - alertname: GPUIdleAllocated
params:
  node: {type: node, default: "{{ alert.labels.Hostname }}"}
target: node
steps:
  - id: cordon
    action: node.cordon
    args: {node: "{{ params.node }}"}
    approval: auto
"""
NS, AGENT_SA, BOT_SA, AUDIENCE = "gpubot", "gpubot-agent", "gpubot", "gpubot"
NODE_A, NODE_B = "gpu-node-03", "gpu-node-04"


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Bot:
    def __init__(self, h: Any, *, cache_seconds: float = 10.0) -> None:
        self.h = h
        self.api = FakeTokenReviews()
        self.clock = Clock()
        self.metrics = WebMetrics()
        self.agents = ServiceAccountAgents(
            cluster="sim",
            reviewer=self.api,
            pods=self.api,
            audience=AUDIENCE,
            namespace=NS,
            service_account=AGENT_SA,
            cache_seconds=cache_seconds,
            now=self.clock,
        )
        self.app = create_app(
            h.service,
            agent_auth=AgentEventAuth(service_accounts=[self.agents]),
            metrics=self.metrics,
        )

    def agent_token(self, node: str, **kw: Any) -> str:
        return self.api.mint(
            namespace=NS,
            service_account=AGENT_SA,
            audience=AUDIENCE,
            pod=f"gpubot-agent-{node[-2:]}",
            node=node,
            **kw,
        )

    async def post(self, body: Any, token: str | None) -> httpx.Response:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://bot"
        ) as c:
            return await c.post("/agent/events", json=body, headers=headers)

    async def stored(self) -> list[Any]:
        await self.h.service.wait_idle()
        return list(await self.h.store.list_incidents())

    def refusals(self, kind: str) -> float:
        value = self.metrics.registry.get_sample_value(
            "gpubot_agent_event_refusals_total", {"kind": kind}
        )
        return value or 0.0


def xid_body(node: str, *, cluster: str = "sim") -> dict[str, Any]:
    event = XidEvent(gpu=1, uuid="GPU-1", xid=79, at=datetime(2026, 11, 22, 9, tzinfo=UTC))
    return xid_alert(event, node=node, cluster=cluster, window_s=300)


def idle_body(node: str, *, pod: str, namespace: str) -> dict[str, Any]:
    """A GPUIdleAllocated alert, as the DCGM exporter labels it: a workload's GPU."""
    body = xid_body(node)
    labels = {
        "alertname": "GPUIdleAllocated",
        "Hostname": node,
        "gpu": "1",
        "xid": "0",
        "cluster": "sim",
        "pod": pod,
        "namespace": namespace,
    }
    body["alerts"][0]["labels"] = labels
    body["commonLabels"] = dict(labels)
    body["groupLabels"] = {"alertname": "GPUIdleAllocated"}
    return body


@pytest.fixture
def bot(harness: MakeHarness) -> Bot:
    return Bot(harness(RUNBOOK))


async def test_attack_node_a_names_a_pod_of_node_b_in_an_idle_alert(bot: Bot) -> None:
    """Node A's agent, its own node in Hostname, but another node's pod and namespace and
    another alertname: an agent sends XID alerts only, so this is refused and not stored."""
    token = bot.agent_token(NODE_A)
    body = idle_body(NODE_A, pod="trainer-on-b-0", namespace="research")
    r = await bot.post(body, token)
    assert r.status_code == 403
    assert "is not one an agent sends" in r.json()["error"]
    assert await bot.stored() == []
    assert bot.refusals("foreign_label") == 1
    # Without the pod labels it is still not an XID alert.
    for labels in (body["alerts"][0]["labels"], body["commonLabels"]):
        del labels["pod"], labels["namespace"]
    r = await bot.post(body, token)
    assert r.status_code == 403
    assert "GPUXidError only" in r.json()["error"]
    assert bot.refusals("not_xid") == 1
    assert await bot.stored() == []


@pytest.mark.parametrize("label", ["pod", "namespace", "container", "node", "kubernetes_node"])
async def test_attack_any_workload_or_second_node_label_is_refused(bot: Bot, label: str) -> None:
    body = xid_body(NODE_A)
    body["alerts"][0]["labels"][label] = "x"
    r = await bot.post(body, bot.agent_token(NODE_A))
    assert r.status_code == 403, r.text
    assert await bot.stored() == []


async def test_attack_node_a_posts_an_xid_for_node_b(bot: Bot) -> None:
    token_a = bot.agent_token(NODE_A)
    bot.agent_token(NODE_B)
    for body in (xid_body(NODE_B), {**xid_body(NODE_A), "commonLabels": {"Hostname": NODE_B}}):
        r = await bot.post(body, token_a)
        assert r.status_code == 403
        assert f"not node {NODE_B}'s" in r.json()["error"]
    assert await bot.stored() == []
    assert bot.refusals("other_node") == 2
    assert not (await bot.h.cluster.kube.get_node(node=NODE_B)).unschedulable


async def test_attack_an_agent_posts_for_another_cluster(bot: Bot) -> None:
    r = await bot.post(xid_body(NODE_A, cluster="prod-b"), bot.agent_token(NODE_A))
    assert r.status_code == 403
    assert bot.refusals("other_cluster") == 1
    assert await bot.stored() == []


async def test_attack_tokens_that_are_not_an_agent_pods(bot: Bot) -> None:
    """Another ServiceAccount (the bot's, a workload's), another audience, a token bound to
    no pod, a pod replaced since (uid differs), a pod not on any node, junk: all refused."""
    api = bot.api
    cases = {
        "bot's account": api.mint(
            namespace=NS, service_account=BOT_SA, audience=AUDIENCE, pod="gpubot-0", node=NODE_A
        ),
        "workload": api.mint(
            namespace="research", service_account=AGENT_SA, audience=AUDIENCE, pod="p", node=NODE_A
        ),
        "other audience": api.mint(
            namespace=NS,
            service_account=AGENT_SA,
            audience="https://kubernetes.default.svc",
            pod="gpubot-agent-03",
            node=NODE_A,
        ),
        "no pod": api.mint(namespace=NS, service_account=AGENT_SA, audience=AUDIENCE),
    }
    replaced = bot.agent_token(NODE_A)
    api.pods[(NS, "gpubot-agent-03")] = PodPlacement(uid="a-new-pod", node=NODE_A)
    cases["replaced pod"] = replaced
    unbound = api.mint(
        namespace=NS, service_account=AGENT_SA, audience=AUDIENCE, pod="pending-agent", node=None
    )
    cases["unscheduled pod"] = unbound
    cases["junk"] = "x" * 64
    for why, token in cases.items():
        r = await bot.post(xid_body(NODE_A), token)
        assert r.status_code in (401, 403), why
        assert len(r.json()["error"].splitlines()) == 1
    r = await bot.post(xid_body(NODE_A), None)
    assert r.status_code == 401
    assert await bot.stored() == []
    assert bot.refusals("unauthenticated") + bot.refusals("not_an_agent") == len(cases) + 1


async def test_api_server_down_is_503_and_stores_nothing(bot: Bot) -> None:
    token = bot.agent_token(NODE_A)
    bot.api.down = True
    r = await bot.post(xid_body(NODE_A), token)
    assert r.status_code == 503  # the agent's sender retries on 5xx
    assert await bot.stored() == []
    bot.api.down = False
    assert (await bot.post(xid_body(NODE_A), token)).status_code == 200


async def test_an_agent_posts_its_own_xid_and_it_is_stored(bot: Bot) -> None:
    r = await bot.post(xid_body(NODE_A), bot.agent_token(NODE_A))
    assert r.status_code == 200, r.text
    [incident] = await bot.stored()
    assert incident.node == NODE_A


async def test_reviews_are_cached_briefly_by_token_hash(harness: MakeHarness) -> None:
    bot = Bot(harness(RUNBOOK), cache_seconds=10)
    token = bot.agent_token(NODE_A)
    for _ in range(3):
        assert (await bot.post(xid_body(NODE_A), token)).status_code == 200
    assert (bot.api.reviews, bot.api.pod_reads) == (1, 1)
    bot.clock.t += 10  # expired: the pod may be gone, the token revoked
    del bot.api.pods[(NS, "gpubot-agent-03")]
    r = await bot.post(xid_body(NODE_A), token)
    assert r.status_code == 403
    assert bot.api.reviews == 2
    cached = repr(vars(vars(bot.agents)["_cache"]))
    assert token not in cached  # the cache holds the tokens' hashes, not the tokens


def test_the_watchers_labels_are_the_ones_an_agent_may_send() -> None:
    event = XidEvent(gpu=0, uuid="GPU-0", xid=154, at=datetime(2026, 11, 22, tzinfo=UTC))
    from gpubot.knowledge.xid.recovery import RecoveryAction

    body = xid_alert(
        event,
        node=NODE_A,
        cluster="sim",
        window_s=300,
        model="NVIDIA H100",
        recovery=next(iter(RecoveryAction)),
    )
    assert set(body["alerts"][0]["labels"]) == AGENT_EVENT_LABELS
