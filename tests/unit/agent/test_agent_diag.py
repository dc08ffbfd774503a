"""POST /v1/diag on the agent: DCGM diagnostics through a stand-in dcgmi, and the client."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from gpubot.agent.api import AgentTokens, create_agent_app
from gpubot.agent.dcgm import DcgmDiagnostics
from gpubot.agent.operations import GpuOperations
from gpubot.agent.simulated import SimulatedDriver
from gpubot.backends.agent_address import AgentAddresses, AgentLocation
from gpubot.backends.agent_client import HttpNodeAgent
from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.simulated.scenarios import fail_diag
from gpubot.domain.control.agent_tokens import node_token
from gpubot.errors import PermanentStepError

FIXTURES = Path(__file__).parents[2] / "fixtures" / "dcgm"
MASTER = "s3cret-agent-master"
NODE = "gpu-node-01"
MUTATE = node_token(master=MASTER, node=NODE, scope="mutate")
READ = node_token(master=MASTER, node=NODE, scope="read")


def standin(tmp_path: Path) -> Path:
    """tests/fixtures/dcgm/dcgmi behind a shebang naming the interpreter running the tests."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "dcgmi"
    body = (FIXTURES / "dcgmi").read_text().split("\n", 1)[1]
    script.write_text(f"#!{sys.executable}\n{body}")
    script.chmod(0o755)
    return script


def env_for(tmp_path: Path, fixture: str, **extra: str) -> dict[str, str]:
    return {
        "PATH": f"{tmp_path / 'bin'}{os.pathsep}/usr/bin:/bin",
        "DCGMI_FIXTURES_DIR": str(FIXTURES),
        "DCGMI_FIXTURE": fixture,
        "DCGMI_ARGS_FILE": str(tmp_path / "args"),
        **extra,
    }


def free_node(cluster: SimulatedCluster) -> None:
    """Evict every pod from NODE, as a drain would."""
    with cluster.mutation() as state:
        state.pods = [p for p in state.pods if p.node != NODE]


def app_client(
    cluster: SimulatedCluster, diagnostics: DcgmDiagnostics | SimulatedDriver | None
) -> httpx.AsyncClient:
    ops = GpuOperations(SimulatedDriver(cluster.agent, node=NODE), diagnostics=diagnostics)
    app = create_agent_app(ops, tokens=AgentTokens(read=READ, mutate=MUTATE), node=NODE)
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://agent",
        headers={"authorization": f"Bearer {MUTATE}"},
    )


@pytest.fixture
def cluster() -> SimulatedCluster:
    c = SimulatedCluster.default()
    free_node(c)
    return c


@pytest.fixture
async def client(cluster: SimulatedCluster, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    standin(tmp_path)
    diagnostics = DcgmDiagnostics(env=env_for(tmp_path, "dcgm-4.2-fail.json", DCGMI_EXIT="226"))
    async with app_client(cluster, diagnostics) as c:
        yield c


async def test_diag_runs_dcgmi_with_an_argument_list_and_returns_per_gpu_results(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    r = await client.post("/v1/diag", json={"level": 3, "gpus": [2, 0]})
    assert r.status_code == 200, r.text
    body = r.json()
    # dcgmi exits non-zero when a test fails; its JSON is read all the same.
    assert (tmp_path / "args").read_text().split() == ["diag", "-r", "3", "-j", "-i", "0,2"]
    assert body["node"] == NODE
    assert body["passed"] is False
    assert body["failed_tests"][0]["test"] == "memory"
    assert body["failed_tests"][0]["gpu"] == 2
    assert "cuCtxCreate" in body["failed_tests"][0]["messages"][0]
    assert {g["gpu"]: g["status"] for g in body["gpus"]}[0] == "warn"
    assert body["summary"].startswith("DCGM diagnostics level 3 FAILED: memory on GPU 2")


async def test_all_gpus_when_none_are_named(client: httpx.AsyncClient, tmp_path: Path) -> None:
    r = await client.post("/v1/diag", json={"level": 1})
    assert r.status_code == 200
    assert (tmp_path / "args").read_text().split() == ["diag", "-r", "1", "-j"]


async def test_diag_needs_the_mutate_token(client: httpx.AsyncClient, tmp_path: Path) -> None:
    r = await client.post(
        "/v1/diag", json={"level": 1}, headers={"authorization": f"Bearer {READ}"}
    )
    assert r.status_code == 403
    assert r.json()["kind"] == "forbidden"
    r = await client.post("/v1/diag", json={"level": 1}, headers={"authorization": "Bearer x"})
    assert r.status_code == 401
    assert not (tmp_path / "args").exists()  # dcgmi never ran


@pytest.mark.parametrize(
    "body",
    [
        {"level": 0},
        {"level": 4},
        {"level": "2"},
        {"level": 2.0},
        {"level": True},
        {},
        {"level": 1, "gpus": [-1]},
        {"level": 1, "gpus": ["0"]},
        {"level": 1, "gpus": [64]},
        {"level": 1, "gpus": "0,1"},
        {"level": 1, "extra": 1},
        {"level": "1; rm -rf /"},
    ],
)
async def test_bad_level_or_gpus_is_400_before_anything_runs(
    client: httpx.AsyncClient, tmp_path: Path, body: dict[str, object]
) -> None:
    r = await client.post("/v1/diag", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["kind"] == "bad_request"
    assert "\n" not in r.json()["error"]
    assert not (tmp_path / "args").exists()


async def test_unknown_gpu_is_404(client: httpx.AsyncClient, tmp_path: Path) -> None:
    r = await client.post("/v1/diag", json={"level": 1, "gpus": [9]})
    assert r.status_code == 404
    assert not (tmp_path / "args").exists()


async def test_refused_with_409_while_a_process_holds_a_gpu_it_would_test(
    tmp_path: Path,
) -> None:
    cluster = SimulatedCluster.default()
    node = "gpu-node-12"  # idle pods hold GPUs 0-4
    standin(tmp_path)
    ops = GpuOperations(
        SimulatedDriver(cluster.agent, node=node),
        diagnostics=DcgmDiagnostics(env=env_for(tmp_path, "dcgm-4.2-pass.json")),
    )
    mutate = node_token(master=MASTER, node=node, scope="mutate")
    app = create_agent_app(ops, tokens=AgentTokens(read=READ, mutate=mutate), node=node)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://agent",
        headers={"authorization": f"Bearer {mutate}"},
    ) as c:
        r = await c.post("/v1/diag", json={"level": 2})
        assert r.status_code == 409
        assert r.json()["kind"] == "in_use"
        assert "drain the node first" in r.json()["error"]
        r = await c.post("/v1/diag", json={"level": 2, "gpus": [0]})
        assert r.status_code == 409
        assert not (tmp_path / "args").exists()
        r = await c.post("/v1/diag", json={"level": 2, "gpus": [7]})  # a free GPU
        assert r.status_code == 200
        assert r.json()["passed"] is True


async def test_dcgmi_not_installed_says_so_in_one_line(
    cluster: SimulatedCluster, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = DcgmDiagnostics(env={"PATH": str(empty)})
    async with app_client(cluster, missing) as c:
        r = await c.post("/v1/diag", json={"level": 1})
    assert r.status_code == 503
    assert r.json() == {
        "error": "dcgmi is not installed (not on the agent's PATH): install DCGM "
        "(datacenter-gpu-manager) in the agent's image, or set agent.dcgmi_path",
        "kind": "dcgm_missing",
    }
    at_path = DcgmDiagnostics(path=str(tmp_path / "nope" / "dcgmi"))
    async with app_client(cluster, at_path) as c:
        r = await c.post("/v1/diag", json={"level": 1})
    assert r.status_code == 503
    assert r.json()["kind"] == "dcgm_missing"
    assert "agent.dcgmi_path" in r.json()["error"]


async def test_host_engine_not_running_is_its_own_error(
    cluster: SimulatedCluster, tmp_path: Path
) -> None:
    script = standin(tmp_path)
    down = DcgmDiagnostics(path=str(script), env=env_for(tmp_path, "hostengine-down"))
    async with app_client(cluster, down) as c:
        r = await c.post("/v1/diag", json={"level": 1})
    assert r.status_code == 503
    assert r.json() == {
        "error": "the DCGM host engine (nv-hostengine) is not running or not reachable; "
        "dcgmi said: Error: unable to establish a connection to the specified host: localhost",
        "kind": "hostengine_down",
    }


async def test_a_hung_dcgmi_is_stopped_at_the_timeout(
    cluster: SimulatedCluster, tmp_path: Path
) -> None:
    standin(tmp_path)
    hung = DcgmDiagnostics(timeout_s=0.5, env=env_for(tmp_path, "hang"))
    async with app_client(cluster, hung) as c:
        r = await c.post("/v1/diag", json={"level": 1})
    assert r.status_code == 504
    assert r.json() == {
        "error": "dcgmi diag -r 1 did not finish within 0.5s; stopped it",
        "kind": "timeout",
    }


async def test_unparseable_output_is_a_clear_error_not_a_traceback(
    cluster: SimulatedCluster, tmp_path: Path
) -> None:
    standin(tmp_path)
    garbage = DcgmDiagnostics(env=env_for(tmp_path, "garbage"))
    async with app_client(cluster, garbage) as c:
        r = await c.post("/v1/diag", json={"level": 1})
    assert r.status_code == 502
    body = r.json()
    assert body["kind"] == "unparseable"
    assert body["error"].startswith("dcgmi diag -r 1 exited 0 with output gpubot cannot read")
    assert "Traceback" not in body["error"]


async def test_the_simulated_driver_reports_injected_failures(cluster: SimulatedCluster) -> None:
    fail_diag(cluster, node=NODE, gpu=3, test="Memory", message="DBE on GPU 3")
    async with app_client(cluster, SimulatedDriver(cluster.agent, node=NODE)) as c:
        r = await c.post("/v1/diag", json={"level": 1})
    body = r.json()
    assert body["passed"] is False
    assert body["failed_tests"] == [{"test": "Memory", "gpu": 3, "messages": ["DBE on GPU 3"]}]


async def test_http_node_agent_diag_and_its_errors(
    cluster: SimulatedCluster, tmp_path: Path
) -> None:
    standin(tmp_path)
    for fixture, passed in (("dcgm-4.2-pass.json", True), ("dcgm-3.3-fail.json", False)):
        diagnostics = DcgmDiagnostics(env=env_for(tmp_path, fixture))
        async with app_client(cluster, diagnostics) as c:
            agent = HttpNodeAgent(
                addresses=AgentAddresses(
                    SimulatedCluster.default().kube, AgentLocation(cluster="sim")
                ),
                master=MASTER,
                transport=c._transport,
            )
            report = await agent.diag(node=NODE, level=2, gpus=[0, 1])
            assert report.passed is passed
            await agent.aclose()
    down = DcgmDiagnostics(env=env_for(tmp_path, "hostengine-down"))
    async with app_client(cluster, down) as c:
        agent = HttpNodeAgent(
            addresses=AgentAddresses(SimulatedCluster.default().kube, AgentLocation(cluster="sim")),
            master=MASTER,
            transport=c._transport,
        )
        with pytest.raises(PermanentStepError, match="nv-hostengine"):
            await agent.diag(node=NODE, level=1)
        await agent.aclose()


async def test_refused_while_a_tested_gpu_is_being_reset_or_another_diag_runs(
    cluster: SimulatedCluster, tmp_path: Path
) -> None:
    standin(tmp_path)
    ops = GpuOperations(
        SimulatedDriver(cluster.agent, node=NODE),
        diagnostics=DcgmDiagnostics(env=env_for(tmp_path, "dcgm-4.2-pass.json")),
    )
    app = create_agent_app(ops, tokens=AgentTokens(read=READ, mutate=MUTATE), node=NODE)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://agent",
        headers={"authorization": f"Bearer {MUTATE}"},
    ) as c:
        ops._resetting.add(2)  # a reset of GPU 2 under way
        r = await c.post("/v1/diag", json={"level": 1})
        assert (r.status_code, r.json()["kind"]) == (409, "busy")
        r = await c.post("/v1/diag", json={"level": 1, "gpus": [3]})  # not the one resetting
        assert r.status_code == 200
        ops._resetting.clear()
        assert ops._diag_lock.acquire(blocking=False)  # another diagnostic holds the node
        try:
            r = await c.post("/v1/diag", json={"level": 1})
            assert r.json() == {
                "error": "a DCGM diagnostic is already running here",
                "kind": "busy",
            }
            assert r.status_code == 409
        finally:
            ops._diag_lock.release()


async def test_a_configured_host_engine_is_passed_to_dcgmi(
    cluster: SimulatedCluster, tmp_path: Path
) -> None:
    """agent.dcgm_host (the GPU Operator's nv-hostengine at the node's address) reaches
    dcgmi as `--host`, as one argument, and the answer is read as before."""
    standin(tmp_path)
    diagnostics = DcgmDiagnostics(
        env=env_for(tmp_path, "dcgm-4.2-pass.json"), host="10.0.3.17:5555"
    )
    async with app_client(cluster, diagnostics) as c:
        r = await c.post("/v1/diag", json={"level": 1})
    assert r.status_code == 200, r.text
    args = (tmp_path / "args").read_text().split()
    assert args == ["diag", "-r", "1", "-j", "--host", "10.0.3.17:5555"]


def test_a_dcgm_host_that_is_not_a_host_and_port_is_refused_in_config() -> None:
    """The setting is an address and a port, never options or a shell word."""
    from pydantic import ValidationError

    from gpubot.config import AgentSettings

    assert AgentSettings(dcgm_host="[fd00::7]:5555").dcgm_host == "[fd00::7]:5555"
    for bad in ("--help", "10.0.0.1; reboot", "a b", ""):
        with pytest.raises(ValidationError):
            AgentSettings(dcgm_host=bad)


# -- whether diagnostics can run: GET /v1/diag/status (a read) -------------------------------


def test_status_names_a_missing_dcgmi_and_a_host_engine_that_does_not_answer(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = DcgmDiagnostics(env={"PATH": str(empty)})
    assert "dcgmi is not installed" in (missing.status() or "")
    standin(tmp_path)
    with socket.socket() as closed:  # a port nothing listens on: bound, never listening
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        down = DcgmDiagnostics(
            env=env_for(tmp_path, "dcgm-4.2-pass.json"), host=f"127.0.0.1:{port}"
        )
        why = down.status() or ""
    assert f"the DCGM host engine at 127.0.0.1:{port} does not answer" in why
    assert "port 5555" in why


def test_status_is_none_when_dcgmi_is_there_and_the_host_engine_answers(tmp_path: Path) -> None:
    standin(tmp_path)
    with socket.socket() as engine:  # a stand-in nv-hostengine: accepts connections
        engine.bind(("127.0.0.1", 0))
        engine.listen(1)
        host = f"127.0.0.1:{engine.getsockname()[1]}"
        assert (
            DcgmDiagnostics(env=env_for(tmp_path, "dcgm-4.2-pass.json"), host=host).status() is None
        )


async def test_the_bot_asks_the_agent_with_its_read_token(
    cluster: SimulatedCluster, tmp_path: Path
) -> None:
    """The bot's client reads GET /v1/diag/status (read scope): None when DCGM can run, the
    agent's one line when it cannot; the route needs a token like every GPU read."""
    empty = tmp_path / "empty"
    empty.mkdir()
    for diagnostics, expected in (
        (SimulatedDriver(cluster.agent, node=NODE), None),
        (DcgmDiagnostics(env={"PATH": str(empty)}), "dcgmi is not installed"),
    ):
        async with app_client(cluster, diagnostics) as c:
            agent = HttpNodeAgent(
                addresses=AgentAddresses(
                    SimulatedCluster.default().kube, AgentLocation(cluster="sim")
                ),
                master=MASTER,
                transport=c._transport,
            )
            why = await agent.diag_status(node=NODE)
            await agent.aclose()
            assert why is None if expected is None else expected in (why or "")
            anonymous = await c.get("/v1/diag/status", headers={"authorization": ""})
            assert anonymous.status_code == 401
