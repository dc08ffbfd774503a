"""The node agent's HTTP API on the simulated driver, and HttpNodeAgent talking to it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gpubot.agent.api import AgentTokens, create_agent_app
from gpubot.agent.driver import GpuDriverError
from gpubot.agent.operations import GpuOperations
from gpubot.agent.simulated import SimulatedDriver
from gpubot.backends.agent_address import AgentAddresses, AgentLocation
from gpubot.backends.agent_client import HttpNodeAgent
from gpubot.backends.simulated import SimulatedCluster, inject_xid
from gpubot.clock import FakeClock
from gpubot.config import load_settings
from gpubot.domain.control.agent_tokens import node_token
from gpubot.errors import ConfigError, InputError, PermanentStepError, TemporaryStepError

MASTER = "s3cret-agent-master"
NODE = "gpu-node-12"  # runs idle pods: GPUs 0-4 held, 5-7 free
TOKEN = node_token(master=MASTER, node=NODE, scope="mutate")
READ = node_token(master=MASTER, node=NODE, scope="read")


@pytest.fixture
def cluster() -> SimulatedCluster:
    return SimulatedCluster.default()


@pytest.fixture
async def client(cluster: SimulatedCluster) -> AsyncIterator[httpx.AsyncClient]:
    ops = GpuOperations(SimulatedDriver(cluster.agent, node=NODE))
    app = create_agent_app(ops, tokens=AgentTokens(read=READ, mutate=TOKEN), node=NODE)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://agent",
        headers={"authorization": f"Bearer {TOKEN}"},
    ) as c:
        yield c


def _free_and_held(cluster: SimulatedCluster) -> tuple[int, int]:
    state = cluster.snapshot()
    held = [g.index for g in state.node(NODE).gpus if state.holder(NODE, g.index)]
    free = [g.index for g in state.node(NODE).gpus if not state.holder(NODE, g.index)]
    return free[0], held[0]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/gpus"),
        ("GET", "/v1/gpus/0/processes"),
        ("POST", "/v1/gpus/0/power-limit"),
        ("POST", "/v1/gpus/0/reset"),
        ("POST", "/v1/gpus/0/power-limit/restore"),
    ],
)
@pytest.mark.parametrize("auth", [None, "Bearer wrong", f"Basic {TOKEN}", "Bearer"])
async def test_unauthenticated_calls_get_401(
    client: httpx.AsyncClient, cluster: SimulatedCluster, method: str, path: str, auth: str | None
) -> None:
    headers = {"authorization": auth} if auth else {}
    client.headers.pop("authorization")
    r = await client.request(method, path, headers=headers, json={"watts": 300})
    assert r.status_code == 401
    assert r.json() == {
        "error": f"missing or wrong bearer token for node {NODE}",
        "kind": "unauthorized",
    }
    assert (await cluster.agent.gpus(node=NODE))[0].power_limit_w == 700.0


async def test_healthz_needs_no_token(client: httpx.AsyncClient) -> None:
    client.headers.pop("authorization")
    assert (await client.get("/healthz")).text == "ok"


async def test_read_gpus_and_processes(
    client: httpx.AsyncClient, cluster: SimulatedCluster
) -> None:
    body = (await client.get("/v1/gpus")).json()
    assert body["node"] == NODE
    assert body["system"]["gpu_count"] == 8
    gpu = body["gpus"][0]
    assert gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert (gpu["power_min_w"], gpu["power_max_w"], gpu["power_default_w"]) == (200, 700, 700)
    assert gpu["condition"] == "ok"
    _free, held = _free_and_held(cluster)
    procs = (await client.get(f"/v1/gpus/{held}/processes")).json()["processes"]
    assert len(procs) == 1
    assert procs[0]["pid"] > 0
    assert procs[0]["name"].startswith("research/")


async def test_power_limit_within_range(
    client: httpx.AsyncClient, cluster: SimulatedCluster
) -> None:
    r = await client.post("/v1/gpus/1/power-limit", json={"watts": 450})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["previous_w"], body["limit_w"], body["range_w"]) == (700.0, 450.0, [200, 700])
    assert (await cluster.agent.gpus(node=NODE))[1].power_limit_w == 450.0
    r = await client.post("/v1/gpus/1/power-limit/restore", json={})
    assert (r.json()["previous_w"], r.json()["limit_w"]) == (450.0, 700.0)


@pytest.mark.parametrize("watts", [150, 701, 5000])
async def test_power_limit_out_of_range_is_rejected_with_the_range(
    client: httpx.AsyncClient, cluster: SimulatedCluster, watts: float
) -> None:
    r = await client.post("/v1/gpus/1/power-limit", json={"watts": watts})
    assert r.status_code == 422
    assert r.json() == {
        "error": f"power limit {watts:g} W is outside GPU 1's range 200-700 W",
        "kind": "out_of_range",
    }
    assert (await cluster.agent.gpus(node=NODE))[1].power_limit_w == 700.0


async def test_dry_run_checks_preconditions_only(
    client: httpx.AsyncClient, cluster: SimulatedCluster
) -> None:
    r = await client.post("/v1/gpus/1/power-limit", json={"watts": 400, "dry_run": True})
    assert r.status_code == 200
    assert r.json()["dry_run"] is True
    assert (await cluster.agent.gpus(node=NODE))[1].power_limit_w == 700.0
    r = await client.post("/v1/gpus/1/power-limit", json={"watts": 100, "dry_run": True})
    assert r.status_code == 422
    free, held = _free_and_held(cluster)
    assert (await client.post(f"/v1/gpus/{free}/reset", json={"dry_run": True})).status_code == 200
    assert (await client.post(f"/v1/gpus/{held}/reset", json={"dry_run": True})).status_code == 409


async def test_reset_refused_while_a_compute_process_holds_the_gpu(
    client: httpx.AsyncClient, cluster: SimulatedCluster
) -> None:
    _free, held = _free_and_held(cluster)
    inject_xid(cluster, node=NODE, gpu=held, xid=48)
    r = await client.post(f"/v1/gpus/{held}/reset", json={})
    assert r.status_code == 409
    assert r.json()["kind"] == "in_use"
    assert "held by compute process" in r.json()["error"]
    assert "drain" in r.json()["error"]
    assert (await cluster.agent.gpus(node=NODE))[held].xid_errors == (48,)


async def test_reset_of_a_free_gpu_runs_and_checks_health(
    client: httpx.AsyncClient, cluster: SimulatedCluster
) -> None:
    free, _held = _free_and_held(cluster)
    inject_xid(cluster, node=NODE, gpu=free, xid=79)
    body = (await client.post(f"/v1/gpus/{free}/reset", json={})).json()
    assert (body["was"], body["healthy"]) == ("lost", True)
    assert "successfully reset" in body["output"]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{", "malformed JSON"),
        (b'{"watts": "lots"}', "watts"),
        (b'{"watts": 300, "extra": 1}', "extra"),
    ],
)
async def test_bad_bodies_get_a_one_line_json_error(
    client: httpx.AsyncClient, body: bytes, reason: str
) -> None:
    r = await client.post("/v1/gpus/1/power-limit", content=body)
    assert r.status_code == 400
    assert reason in r.json()["error"]
    assert "\n" not in r.json()["error"]


async def test_unknown_gpu_is_404(client: httpx.AsyncClient) -> None:
    r = await client.post("/v1/gpus/9/power-limit", json={"watts": 300})
    assert r.status_code == 404
    assert r.json()["kind"] == "not_found"


def test_the_agent_refuses_to_run_without_a_token(cluster: SimulatedCluster) -> None:
    with pytest.raises(ValueError, match="token"):
        create_agent_app(
            GpuOperations(SimulatedDriver(cluster.agent, node=NODE)),
            tokens=AgentTokens(read=""),
            node=NODE,
        )


class _NvidiaSmiRecorder:
    def __init__(self, returncode: int = 0, output: str = "GPU reset.") -> None:
        self.calls: list[tuple[list[str], dict[str, Any]]] = []
        self.returncode, self.output = returncode, output

    def __call__(self, argv: list[str], **kwargs: Any) -> Any:
        import subprocess

        self.calls.append((argv, kwargs))
        return subprocess.CompletedProcess(argv, self.returncode, self.output, "")


def test_nvml_reset_runs_nvidia_smi_with_an_argument_list(monkeypatch: pytest.MonkeyPatch) -> None:
    import pynvml

    from gpubot.agent import nvml

    monkeypatch.setattr(pynvml, "nvmlInit", lambda: None)
    runner = _NvidiaSmiRecorder()
    driver = nvml.NvmlDriver(run=runner)
    assert driver.reset(index=3, timeout_s=42) == "GPU reset."
    [(argv, kwargs)] = runner.calls
    assert argv == ["nvidia-smi", "-r", "-i", "3"]
    assert kwargs == {"capture_output": True, "text": True, "timeout": 42, "check": False}
    failing = nvml.NvmlDriver(run=_NvidiaSmiRecorder(6, "Unable to reset GPU: In use"))
    with pytest.raises(GpuDriverError, match="exited 6: Unable to reset GPU: In use"):
        failing.reset(index=3, timeout_s=1)


# HttpNodeAgent


def _addresses() -> AgentAddresses:
    return AgentAddresses(SimulatedCluster.default().kube, AgentLocation(cluster="sim"))


def _client_for(app_client: httpx.AsyncClient, *, master: str = MASTER) -> HttpNodeAgent:
    return HttpNodeAgent(
        addresses=_addresses(),
        master=master,
        transport=app_client._transport,  # the same ASGI app
    )


async def test_http_node_agent_maps_errors(
    client: httpx.AsyncClient, cluster: SimulatedCluster
) -> None:
    agent = _client_for(client)
    gpus = await agent.gpus(node=NODE)
    assert len(gpus) == 8
    assert gpus[0].power_max_w == 700.0
    capped = await agent.set_power_limit(node=NODE, gpu=1, watts=500)
    assert capped.power_limit_w == 500.0
    with pytest.raises(InputError, match="range 200-700 W"):
        await agent.set_power_limit(node=NODE, gpu=1, watts=100)
    _free, held = _free_and_held(cluster)
    with pytest.raises(PermanentStepError, match="held by compute process"):
        await agent.reset_gpu(node=NODE, gpu=held)
    restored = await agent.restore_power_limit(node=NODE, gpu=1)
    assert restored.power_limit_w == 700.0
    await agent.aclose()
    wrong = _client_for(client, master="nope")
    with pytest.raises(PermanentStepError, match="GPUBOT_AGENT_TOKEN"):
        await wrong.gpus(node=NODE)
    await wrong.aclose()


async def test_http_node_agent_retries_connection_errors_only() -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.host)
        if len(calls) < 3:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(200, json={"node": "gpu-node-01", "gpus": []})

    clock = FakeClock()
    agent = HttpNodeAgent(
        addresses=_addresses(),
        master=MASTER,
        retry_delay_s=0.5,
        transport=httpx.MockTransport(handler),
        clock=clock,
    )
    assert await agent.gpus(node="gpu-node-01") == []
    assert calls == ["127.0.0.1"] * 3  # the address the cluster reports, never the name
    assert clock.slept == [0.5, 1.0]  # a longer pause before each retry, on fake time
    calls.clear()
    never = HttpNodeAgent(
        addresses=_addresses(),
        master=MASTER,
        retry_delay_s=0,
        connect_retries=1,
        transport=httpx.MockTransport(
            lambda r: (_ for _ in ()).throw(httpx.ConnectError("down", request=r))
        ),
    )
    with pytest.raises(TemporaryStepError, match="unreachable"):
        await never.gpus(node="gpu-node-01")

    def slow(request: httpx.Request) -> httpx.Response:
        calls.append("read")
        raise httpx.ReadTimeout("slow", request=request)

    timed = HttpNodeAgent(
        addresses=_addresses(), master=MASTER, transport=httpx.MockTransport(slow)
    )
    with pytest.raises(TemporaryStepError, match="timed out"):
        await timed.set_power_limit(node="gpu-node-01", gpu=0, watts=300)
    assert calls == ["read"]  # a POST that may have reached the agent is not repeated
    for a in (agent, never, timed):
        await a.aclose()


def test_agent_token_from_env_or_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUBOT_AGENT_TOKEN", raising=False)
    secret = tmp_path / "token"
    secret.write_text("from-file\n")
    assert load_settings(agent={"token_file": secret}).agent_token_value() == "from-file"
    monkeypatch.setenv("GPUBOT_AGENT_TOKEN", "from-env")
    assert load_settings(agent={"token_file": secret}).agent_token_value() == "from-env"
    monkeypatch.delenv("GPUBOT_AGENT_TOKEN")
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings(agent={"token_file": tmp_path / "missing"}).agent_token_value()
    assert load_settings().agent_token_value() is None
