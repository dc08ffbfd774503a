"""The bot's per-node agent tokens: one per node, for that node's audience, bound to the
bot's pod, requested again at 80 % of their life (fake clock), refused by every other agent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from gpubot.agent.api import create_agent_app
from gpubot.agent.bot_identity import BotServiceAccount
from gpubot.agent.operations import GpuOperations
from gpubot.agent.simulated import SimulatedDriver
from gpubot.backends.agent_address import AgentAddresses, AgentLocation
from gpubot.backends.agent_client import HttpNodeAgent
from gpubot.backends.bot_tokens import PerNodeBotTokens
from gpubot.backends.fake_identity import FakeTokenReviews
from gpubot.backends.simulated import SimulatedCluster
from gpubot.domain.control.token_reviews import node_audience
from gpubot.errors import IdentityUnavailableError, PermanentStepError, TemporaryStepError

NS, BOT, AUD = "gpubot", "gpubot", "gpubot"
POD = ("gpubot-7d9f-x2", "0b6a2c1e-1111-4222-8333-444455556666")


class Clock:
    def __init__(self) -> None:
        self.t = datetime(2026, 11, 28, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.t


def _tokens(api: FakeTokenReviews, clock: Clock) -> PerNodeBotTokens:
    return PerNodeBotTokens(
        api, namespace=NS, service_account=BOT, audience=AUD, seconds=600, pod=POD, now=clock
    )


async def test_one_token_per_node_for_its_audience_bound_to_the_bots_pod() -> None:
    api, clock = FakeTokenReviews(now=Clock().t), Clock()
    tokens = _tokens(api, clock)
    a1, a2, b = (
        await tokens("gpu-node-01"),
        await tokens("gpu-node-01"),
        await tokens("gpu-node-02"),
    )
    assert a1 == a2
    assert a1 != b
    assert api.issued == [
        (NS, BOT, "gpubot:gpu-node-01", 600, POD),
        (NS, BOT, "gpubot:gpu-node-02", 600, POD),
    ]


async def test_a_token_is_requested_again_at_80_percent_of_its_life() -> None:
    api, clock = FakeTokenReviews(now=Clock().t), Clock()
    tokens = _tokens(api, clock)
    first = await tokens("gpu-node-01")
    clock.t += timedelta(seconds=479)
    assert await tokens("gpu-node-01") == first
    clock.t += timedelta(seconds=1)
    assert await tokens("gpu-node-01") != first
    assert len(api.issued) == 2


async def test_api_server_down_is_a_temporary_step_failure() -> None:
    api = FakeTokenReviews(down=True)
    with pytest.raises(IdentityUnavailableError):
        await _tokens(api, Clock())("gpu-node-01")


async def test_attack_the_token_node_as_agent_received_does_not_open_node_b() -> None:
    """Node A taken over as root: it has the bot's token for A, and replays it to B's agent
    (every route), then to A's own, as a read and an action. B refuses it (its audience is
    A's); A takes it."""
    api, clock = FakeTokenReviews(), Clock()
    tokens = _tokens(api, clock)
    cluster = SimulatedCluster.default()

    def agent(node: str) -> httpx.AsyncClient:
        callers = BotServiceAccount(
            reviewer=api,
            audience=node_audience(AUD, node),
            username=f"system:serviceaccount:{NS}:{BOT}",
        )
        ops = GpuOperations(SimulatedDriver(cluster.agent, node=node))
        app = create_agent_app(ops, tokens=callers, node=node)
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://a")

    stolen = await tokens("gpu-node-01")
    auth = {"authorization": f"Bearer {stolen}"}
    async with agent("gpu-node-02") as b, agent("gpu-node-01") as a:
        for method, path, body in [
            ("GET", "/v1/gpus", None),
            ("POST", "/v1/gpus/6/reset", {"dry_run": True}),
            ("POST", "/v1/gpus/6/power-limit", {"watts": 400, "dry_run": True}),
        ]:
            r = await b.request(method, path, json=body, headers=auth)
            assert r.status_code == 401, r.text
            r = await a.request(method, path, json=body, headers=auth)
            assert r.status_code not in (401, 403), r.text  # past the check (a GPU may be busy)


async def test_the_bot_calls_each_agent_with_that_nodes_token() -> None:
    api, clock = FakeTokenReviews(), Clock()
    cluster = SimulatedCluster.default()
    seen: list[tuple[str, str]] = []
    known: dict[str, str] = {}  # token → its audience, kept after a revocation
    apps = {}
    for node in ("gpu-node-01", "gpu-node-02"):
        callers = BotServiceAccount(
            reviewer=api,
            audience=node_audience(AUD, node),
            username=f"system:serviceaccount:{NS}:{BOT}",
            cache_seconds=0,  # every call reviewed: a revocation shows at once
        )
        ops = GpuOperations(SimulatedDriver(cluster.agent, node=node))
        apps[node] = httpx.ASGITransport(app=create_agent_app(ops, tokens=callers, node=node))

    async def route(request: httpx.Request) -> httpx.Response:
        # The simulated cluster gives every node 127.0.0.1: the test routes by the token.
        token = request.headers["authorization"].removeprefix("Bearer ")
        known.update({t: r.audiences[0] for t, r in api.tokens.items()})
        node = known[token].split(":", 1)[1]
        seen.append((node, request.url.path))
        return await apps[node].handle_async_request(request)

    client = HttpNodeAgent(
        addresses=AgentAddresses(
            cluster.kube, AgentLocation(cluster="sim", address="internal_ip", port=9400)
        ),
        master=None,
        node_tokens=_tokens(api, clock),
        transport=httpx.MockTransport(route),
    )
    assert len(await client.gpus(node="gpu-node-01")) == 8
    assert len(await client.gpus(node="gpu-node-02")) == 8
    assert seen == [("gpu-node-01", "/v1/gpus"), ("gpu-node-02", "/v1/gpus")]
    api.down = True
    with pytest.raises(TemporaryStepError, match="no token for gpu-node-03's agent"):
        await client.gpus(node="gpu-node-03")
    api.down = False
    api.tokens.clear()  # every token revoked (the bot's pod replaced): refused, not retried
    with pytest.raises(PermanentStepError):
        await client.gpus(node="gpu-node-01")
    await client.aclose()
