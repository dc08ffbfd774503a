"""The agent on Kubernetes takes calls from the bot's ServiceAccount only, checked with the
TokenReview API; its own TokenReview client and event sender re-read rotated token files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from gpubot.agent.api import create_agent_app
from gpubot.agent.bot_identity import BotServiceAccount
from gpubot.agent.operations import GpuOperations
from gpubot.agent.simulated import SimulatedDriver
from gpubot.agent.token_review import HttpTokenReviewer
from gpubot.agent.xid_watcher import BotEventSender
from gpubot.backends.agent_address import AgentAddresses, AgentLocation
from gpubot.backends.agent_client import HttpNodeAgent
from gpubot.backends.fake_identity import FakeTokenReviews
from gpubot.backends.simulated import SimulatedCluster
from gpubot.errors import IdentityUnavailableError, PermanentStepError

NS, AUDIENCE, NODE = "gpubot", "gpubot", "gpu-node-12"
BOT_USER = f"system:serviceaccount:{NS}:gpubot"
ACTIONS = [
    ("POST", "/v1/gpus/6/power-limit", {"watts": 500, "dry_run": True}),
    ("POST", "/v1/gpus/6/power-limit/restore", {"dry_run": True}),
    ("POST", "/v1/gpus/6/reset", {"dry_run": True}),
    ("POST", "/v1/diag", {"level": 1}),
]
READS = [("GET", "/v1/gpus", None), ("GET", "/v1/gpus/0/processes", None)]


class Clock:
    t = 0.0

    def __call__(self) -> float:
        return self.t


class Agent:
    def __init__(self) -> None:
        self.api = FakeTokenReviews()
        self.clock = Clock()
        self.cluster = SimulatedCluster.default()
        self.callers = BotServiceAccount(
            reviewer=self.api, audience=AUDIENCE, username=BOT_USER, now=self.clock
        )
        ops = GpuOperations(SimulatedDriver(self.cluster.agent, node=NODE))
        self.app = create_agent_app(ops, tokens=self.callers, node=NODE)
        self.bot = self.api.mint(
            namespace=NS, service_account="gpubot", audience=AUDIENCE, pod="gpubot-0", node="n"
        )

    async def call(self, method: str, path: str, body: Any, token: str | None) -> httpx.Response:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://agent"
        ) as c:
            return await c.request(method, path, json=body, headers=headers)


@pytest.fixture
def agent() -> Agent:
    return Agent()


@pytest.mark.parametrize(("method", "path", "body"), ACTIONS + READS)
async def test_attack_any_token_but_the_bots_is_refused(
    agent: Agent, method: str, path: str, body: Any
) -> None:
    """Another agent's token (from a node it took over), a workload's, the right account with
    another audience, a token bound to no pod, junk, none: nothing runs."""
    api = agent.api
    before = agent.cluster.snapshot()
    refused = {
        "other agent": (
            403,
            api.mint(
                namespace=NS,
                service_account="gpubot-agent",
                audience=AUDIENCE,
                pod="gpubot-agent-x",
                node="gpu-node-01",
            ),
        ),
        "workload": (
            403,
            api.mint(
                namespace="research",
                service_account="gpubot",
                audience=AUDIENCE,
                pod="p",
                node=NODE,
            ),
        ),
        "api audience": (
            401,
            api.mint(
                namespace=NS, service_account="gpubot", audience="https://kubernetes.default.svc"
            ),
        ),
        "junk": (401, "0" * 64),
        "none": (401, None),
    }
    for why, (status, token) in refused.items():
        r = await agent.call(method, path, body, token)
        assert r.status_code == status, (why, r.text)
        assert r.json()["kind"] in ("unauthorized", "forbidden")
    assert agent.cluster.snapshot() == before


@pytest.mark.parametrize(("method", "path", "body"), ACTIONS + READS)
async def test_the_bots_token_reads_and_acts(
    agent: Agent, method: str, path: str, body: Any
) -> None:
    r = await agent.call(method, path, body, agent.bot)
    if path == "/v1/diag":  # past the check: no DCGM in the simulated agent
        assert r.json()["kind"] == "dcgm_missing"
        return
    assert r.status_code == 200, r.text
    assert r.json()["node"] == NODE


async def test_api_server_down_is_503_not_a_yes(agent: Agent) -> None:
    agent.api.down = True
    r = await agent.call("POST", "/v1/gpus/6/reset", {"dry_run": True}, agent.bot)
    assert r.status_code == 503
    assert r.json()["kind"] == "unavailable"


async def test_reviews_are_cached_then_asked_again(agent: Agent) -> None:
    for _ in range(3):
        assert (await agent.call("GET", "/v1/gpus", None, agent.bot)).status_code == 200
    assert agent.api.reviews == 1
    agent.clock.t += 10
    agent.api.tokens.pop(agent.bot)  # revoked (its pod deleted) since
    assert (await agent.call("GET", "/v1/gpus", None, agent.bot)).status_code == 401
    assert agent.api.reviews == 2


# -- the agent's TokenReview client -------------------------------------------------------


async def test_token_review_client_sends_the_audience_and_a_fresh_own_token(
    tmp_path: Path,
) -> None:
    own = tmp_path / "token"
    seen: list[tuple[str, dict[str, Any]]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append((request.headers["authorization"], json.loads(request.content)))
        status = {
            "authenticated": True,
            "audiences": ["gpubot"],
            "user": {"username": BOT_USER, "extra": {}},
        }
        return httpx.Response(201, json={"kind": "TokenReview", "status": status})

    reviewer = HttpTokenReviewer(
        api_url="https://api:6443", token_file=own, transport=httpx.MockTransport(answer)
    )
    own.write_text("first\n")
    assert (await reviewer.review(token="t1", audience="gpubot")).username == BOT_USER
    own.write_text("rotated")  # the kubelet rewrote the file
    await reviewer.review(token="t2", audience="gpubot")
    await reviewer.aclose()
    assert [h for h, _ in seen] == ["Bearer first", "Bearer rotated"]
    assert seen[0][1]["spec"] == {"token": "t1", "audiences": ["gpubot"]}


@pytest.mark.parametrize(
    ("response", "says"),
    [
        (httpx.Response(403, json={"kind": "Status"}), "create tokenreviews"),
        (httpx.Response(500, text="boom"), "500"),
        (httpx.Response(201, text="not json"), "not JSON"),
    ],
)
async def test_token_review_failures_are_unavailable_never_a_yes(
    tmp_path: Path, response: httpx.Response, says: str
) -> None:
    (tmp_path / "token").write_text("own")
    reviewer = HttpTokenReviewer(
        api_url="https://api:6443",
        token_file=tmp_path / "token",
        transport=httpx.MockTransport(lambda _: response),
    )
    with pytest.raises(IdentityUnavailableError, match=says):
        await reviewer.review(token="t", audience="gpubot")
    await reviewer.aclose()


# -- the tokens each side sends -----------------------------------------------------------


async def test_bot_sends_its_projected_token_re_read_on_each_call(tmp_path: Path) -> None:
    token_file = tmp_path / "bot-token"
    agent = Agent()
    seen: list[str] = []
    asgi = httpx.ASGITransport(app=agent.app)

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["authorization"])
        return await asgi.handle_async_request(request)

    cluster = agent.cluster
    location = AgentLocation(cluster="sim", address="internal_ip", port=9400)
    client = HttpNodeAgent(
        addresses=AgentAddresses(cluster.kube, location),
        master=None,
        token_file=token_file,
        transport=httpx.MockTransport(handler),
    )
    token_file.write_text(agent.bot + "\n")
    assert len(await client.gpus(node=NODE)) == 8
    rotated = agent.api.mint(namespace=NS, service_account="gpubot", audience=AUDIENCE)
    token_file.write_text(rotated)
    await client.gpus(node=NODE)
    assert seen == [f"Bearer {agent.bot}", f"Bearer {rotated}"]
    token_file.write_text(agent.api.mint(namespace=NS, service_account="x", audience=AUDIENCE))
    with pytest.raises(PermanentStepError, match="may not call the agent"):
        await client.gpus(node=NODE)
    await client.aclose()


async def test_event_sender_reads_its_token_on_each_send(tmp_path: Path) -> None:
    token_file = tmp_path / "agent-token"
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["authorization"])
        return httpx.Response(200, json={})

    sender = BotEventSender(
        bot_url="http://bot",
        token=lambda: token_file.read_text().strip(),
        transport=httpx.MockTransport(answer),
    )
    for text in ("one", "two"):
        token_file.write_text(text)
        await sender({"alerts": [{"labels": {"xid": "79", "gpu": "0"}}]})
    await sender.aclose()
    assert seen == ["Bearer one", "Bearer two"]


async def test_a_read_only_agent_refuses_the_bots_actions() -> None:
    agent = Agent()
    agent.callers.read_only = True
    r = await agent.call("POST", "/v1/gpus/6/reset", {"dry_run": True}, agent.bot)
    assert r.status_code == 403
    assert "read-only" in r.json()["error"]
    assert (await agent.call("GET", "/v1/gpus", None, agent.bot)).status_code == 200
