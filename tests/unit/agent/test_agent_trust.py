"""The agent's trust rules: per-node tokens, read vs mutate, one reset per GPU, UUID, parsing."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import threading
from collections.abc import AsyncIterator

import httpx
import pytest

from gpubot.agent.api import AgentTokens, create_agent_app
from gpubot.agent.operations import GpuOperations
from gpubot.agent.simulated import SimulatedDriver
from gpubot.backends.simulated import SimulatedCluster
from gpubot.domain.control.agent_tokens import node_token, token_scope

MASTER = "the-bots-master-secret"
NODE = "gpu-node-12"  # GPUs 0-4 held by pods, 5-7 free
OTHER = "gpu-node-13"


def _tokens(node: str) -> AgentTokens:
    return AgentTokens(
        read=node_token(master=MASTER, node=node, scope="read"),
        mutate=node_token(master=MASTER, node=node, scope="mutate"),
    )


class GatedDriver(SimulatedDriver):
    """The simulated driver, whose reset of `gated` waits until the test lets it finish."""

    def __init__(self, cluster: SimulatedCluster, *, node: str, gated: int) -> None:
        super().__init__(cluster.agent, node=node)
        self.gated = gated
        self.entered = threading.Event()
        self.release = threading.Event()
        self.resets: list[int] = []
        self.uuids: list[str | None] = []

    def reset(self, *, index: int, timeout_s: float, uuid: str | None = None) -> str:
        self.resets.append(index)
        self.uuids.append(uuid)
        if index == self.gated:
            self.entered.set()
            self.release.wait(timeout=30)
        return super().reset(index=index, timeout_s=timeout_s, uuid=uuid)


@pytest.fixture
def driver() -> GatedDriver:
    return GatedDriver(SimulatedCluster.default(), node=NODE, gated=5)


@pytest.fixture
async def agent(driver: GatedDriver) -> AsyncIterator[httpx.AsyncClient]:
    app = create_agent_app(GpuOperations(driver), tokens=_tokens(NODE), node=NODE)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://agent"
    ) as client:
        yield client


def _auth(node: str, scope: str) -> dict[str, str]:
    return {"authorization": f"Bearer {node_token(master=MASTER, node=node, scope=scope)}"}  # type: ignore[arg-type]


def test_node_tokens_are_hmac_of_scope_and_node() -> None:
    expected = hmac.new(
        MASTER.encode(), b"gpubot-agent:mutate:gpu-node-12", hashlib.sha256
    ).hexdigest()
    assert node_token(master=MASTER, node=NODE, scope="mutate") == expected
    tokens = {
        node_token(master=m, node=n, scope=s)  # type: ignore[arg-type]
        for m in (MASTER, MASTER + "x")
        for n in (NODE, OTHER)
        for s in ("read", "mutate")
    }
    assert len(tokens) == 8  # every master, node and scope gives its own token
    assert token_scope(master=MASTER, node=NODE, given=expected) == "mutate"
    assert token_scope(master=MASTER, node=OTHER, given=expected) is None
    for bad in ("evil.example:80/x", "gpu-node-12\n", ""):
        with pytest.raises(ValueError, match="node name"):
            node_token(master=MASTER, node=bad, scope="read")
    with pytest.raises(ValueError, match="empty"):
        node_token(master="", node=NODE, scope="read")


MUTATING = [
    ("/v1/gpus/6/power-limit", {"watts": 300}),
    ("/v1/gpus/6/power-limit/restore", {}),
    ("/v1/gpus/6/reset", {}),
]


@pytest.mark.parametrize(("path", "body"), MUTATING)
async def test_a_read_token_reads_but_cannot_mutate(
    agent: httpx.AsyncClient, driver: GatedDriver, path: str, body: dict[str, int]
) -> None:
    assert (await agent.get("/v1/gpus", headers=_auth(NODE, "read"))).status_code == 200
    r = await agent.post(path, json=body, headers=_auth(NODE, "read"))
    assert r.status_code == 403
    assert "mutate token" in r.json()["error"]
    assert driver.resets == []
    assert driver.gpus()[6].power_limit_w == 700.0


@pytest.mark.parametrize("scope", ["read", "mutate"])
async def test_another_nodes_token_opens_nothing(agent: httpx.AsyncClient, scope: str) -> None:
    assert (await agent.get("/v1/gpus", headers=_auth(OTHER, scope))).status_code == 401
    for path, body in MUTATING:
        r = await agent.post(path, json=body, headers=_auth(OTHER, scope))
        assert r.status_code == 401
    master = {"authorization": f"Bearer {MASTER}"}
    assert (await agent.get("/v1/gpus", headers=master)).status_code == 401


async def test_an_agent_without_a_mutate_token_is_read_only(driver: GatedDriver) -> None:
    read_only = AgentTokens(read=_tokens(NODE).read)
    app = create_agent_app(GpuOperations(driver), tokens=read_only, node=NODE)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://agent"
    ) as client:
        assert (await client.get("/v1/gpus", headers=_auth(NODE, "read"))).status_code == 200
        r = await client.post("/v1/gpus/6/reset", json={}, headers=_auth(NODE, "mutate"))
        assert r.status_code == 401  # a mutate token this agent does not know is no token
        r = await client.post("/v1/gpus/6/reset", json={}, headers=_auth(NODE, "read"))
        assert r.status_code == 403
        assert "read-only" in r.json()["error"]


async def test_a_second_reset_of_one_gpu_gets_409_while_the_first_runs(
    agent: httpx.AsyncClient, driver: GatedDriver
) -> None:
    mutate = _auth(NODE, "mutate")
    first = asyncio.create_task(agent.post("/v1/gpus/5/reset", json={}, headers=mutate))
    assert await asyncio.to_thread(driver.entered.wait, 10)  # the first is inside nvidia-smi
    second = await agent.post("/v1/gpus/5/reset", json={}, headers=mutate)
    assert second.status_code == 409
    assert second.json() == {"error": "reset of GPU 5 already in progress", "kind": "busy"}
    other = await agent.post("/v1/gpus/6/reset", json={}, headers=mutate)
    assert other.status_code == 200  # another GPU is not held up
    driver.release.set()
    assert (await first).status_code == 200
    assert driver.resets == [5, 6]  # the refused reset never reached the driver
    again = await agent.post("/v1/gpus/5/reset", json={}, headers=mutate)
    assert again.status_code == 200  # the lock is released after the first finishes
    assert driver.resets == [5, 6, 5]


async def test_a_reset_naming_another_gpus_uuid_is_refused(
    agent: httpx.AsyncClient, driver: GatedDriver
) -> None:
    driver.release.set()
    gpus = driver.gpus()
    mutate = _auth(NODE, "mutate")
    r = await agent.post("/v1/gpus/6/reset", json={"uuid": gpus[7].uuid}, headers=mutate)
    assert r.status_code == 409
    assert r.json()["kind"] == "uuid_mismatch"
    assert f"GPU 6 is {gpus[6].uuid}, not {gpus[7].uuid}" in r.json()["error"]
    assert driver.resets == []
    r = await agent.post("/v1/gpus/6/reset", json={"uuid": "../../etc"}, headers=mutate)
    assert r.status_code == 400
    r = await agent.post("/v1/gpus/6/reset", json={"uuid": gpus[6].uuid}, headers=mutate)
    assert r.status_code == 200
    assert r.json()["uuid"] == gpus[6].uuid
    assert driver.resets == [6]
    assert driver.uuids == [gpus[6].uuid]  # the driver is told which device, not only where


@pytest.mark.parametrize(
    "body",
    [b"[" * 5000, b'{"a":' * 5000, b"[" * 9 + b"]" * 9, b'{"watts": [[[[[[[[[1]]]]]]]]]}'],
)
async def test_deeply_nested_json_is_400_not_500(agent: httpx.AsyncClient, body: bytes) -> None:
    r = await agent.post("/v1/gpus/6/power-limit", content=body, headers=_auth(NODE, "mutate"))
    assert r.status_code == 400
    assert r.json()["kind"] == "bad_request"


async def test_brackets_inside_strings_do_not_count_as_nesting(agent: httpx.AsyncClient) -> None:
    body = b'{"uuid": "GPU-[[[[[[[[[[[[", "dry_run": true}'
    r = await agent.post("/v1/gpus/6/reset", content=body, headers=_auth(NODE, "mutate"))
    assert r.status_code == 400
    assert "uuid" in r.json()["error"]  # judged by the schema, not the nesting bound


def test_nvml_reset_addresses_the_device_by_uuid(monkeypatch: pytest.MonkeyPatch) -> None:
    """`nvidia-smi -r -i GPU-…`: the device the agent checked, not whatever sits at index."""
    import subprocess
    from typing import Any

    import pynvml

    from gpubot.agent import nvml

    calls: list[list[str]] = []

    def run(argv: list[str], **kwargs: Any) -> Any:
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 0, "GPU reset.", "")

    monkeypatch.setattr(pynvml, "nvmlInit", lambda: None)
    driver = nvml.NvmlDriver(run=run)
    driver.reset(index=3, timeout_s=5, uuid="GPU-5a1b2c3d-0000-1111-2222-333344445555")
    driver.reset(index=3, timeout_s=5, uuid="GPU-1 --all")  # not a UUID: the index is used
    assert [argv[1:] for argv in calls] == [
        ["-r", "-i", "GPU-5a1b2c3d-0000-1111-2222-333344445555"],
        ["-r", "-i", "3"],
    ]
