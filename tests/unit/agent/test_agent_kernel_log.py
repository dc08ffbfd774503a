"""The agent serves its node's kernel log around a death (GET /v1/kernel-log, a read), and
the bot's client reads it: for OOM triage, where the kernel's OOM killer names the victim."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from gpubot.agent import api as agent_api
from gpubot.agent.api import AgentTokens, create_agent_app
from gpubot.agent.kernel_log import KERNEL_LOG_LINES, KernelLogUnavailable, read_kernel_log
from gpubot.agent.operations import GpuOperations
from gpubot.agent.simulated import SimulatedDriver
from gpubot.backends.agent_address import AgentAddresses, AgentLocation
from gpubot.backends.agent_client import HttpNodeAgent
from gpubot.backends.simulated import SimulatedCluster
from gpubot.domain.control.agent_tokens import node_token
from gpubot.errors import GpubotError

MASTER = "s3cret-agent-master"
NODE = "gpu-node-01"
READ = node_token(master=MASTER, node=NODE, scope="read")
MUTATE = node_token(master=MASTER, node=NODE, scope="mutate")
OOM = "2026-11-28T05:00:01+0000 gpu-node-01 kernel: Memory cgroup out of memory: Killed process 7"


class FakeRun:
    """subprocess.run as journalctl would answer it."""

    def __init__(self, stdout: str = "", returncode: int = 0, stderr: str = "") -> None:
        self.stdout, self.returncode, self.stderr = stdout, returncode, stderr
        self.calls: list[list[str]] = []

    def __call__(self, command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        self.calls.append(command)
        return subprocess.CompletedProcess(command, self.returncode, self.stdout, self.stderr)


def test_journalctl_is_asked_for_the_kernel_in_the_window_and_its_tail_is_kept() -> None:
    run = FakeRun(stdout="\n".join(f"line {i}" for i in range(KERNEL_LOG_LINES + 10)))
    lines = read_kernel_log(since=100, until=400, run=run)
    assert run.calls[0][:2] == ["journalctl", "-k"]
    assert run.calls[0][6:10] == ["--since", "@100", "--until", "@400"]
    assert len(lines) == KERNEL_LOG_LINES
    assert lines[-1] == f"line {KERNEL_LOG_LINES + 9}"


@pytest.mark.parametrize(
    ("run", "why"),
    [
        (FakeRun(returncode=1, stderr="No journal files were found.\n"), "No journal files"),
        (
            lambda *a, **k: (_ for _ in ()).throw(FileNotFoundError("journalctl")),
            "not installed",
        ),
        (
            lambda *a, **k: (_ for _ in ()).throw(subprocess.TimeoutExpired("journalctl", 10)),
            "took over",
        ),
    ],
)
def test_a_journal_that_cannot_be_read_says_why_in_one_line(run: Any, why: str) -> None:
    with pytest.raises(KernelLogUnavailable, match=why):
        read_kernel_log(since=0, until=1, run=run)


def _client(cluster: SimulatedCluster) -> httpx.AsyncClient:
    ops = GpuOperations(SimulatedDriver(cluster.agent, node=NODE))
    app = create_agent_app(ops, tokens=AgentTokens(read=READ, mutate=MUTATE), node=NODE)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://agent")


async def test_the_route_needs_a_token_checks_the_window_and_the_client_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[tuple[int, int]] = []

    def fake(*, since: int, until: int) -> list[str]:
        asked.append((since, until))
        return [OOM]

    monkeypatch.setattr(agent_api, "read_kernel_log", fake)
    cluster = SimulatedCluster.default()
    async with _client(cluster) as c:
        assert (await c.get("/v1/kernel-log?since=1&until=2")).status_code == 401
        read = {"authorization": f"Bearer {READ}"}
        assert (await c.get("/v1/kernel-log?since=x&until=2", headers=read)).status_code == 400
        too_long = await c.get("/v1/kernel-log?since=0&until=999999", headers=read)
        assert too_long.status_code == 400
        agent = HttpNodeAgent(
            addresses=AgentAddresses(cluster.kube, AgentLocation(cluster="sim")),
            master=MASTER,
            transport=c._transport,
        )
        died = datetime(2026, 11, 28, 5, 0, tzinfo=UTC)
        text = await agent.kernel_log(
            node=NODE, since=died - timedelta(minutes=5), until=died + timedelta(minutes=5)
        )
        await agent.aclose()
    assert text == OOM
    assert asked[-1] == (int(died.timestamp()) - 300, int(died.timestamp()) + 300)


async def test_a_journal_the_agent_cannot_read_is_an_error_the_triage_can_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*, since: int, until: int) -> list[str]:
        raise KernelLogUnavailable("journalctl is not installed in the agent's image")

    monkeypatch.setattr(agent_api, "read_kernel_log", broken)
    cluster = SimulatedCluster.default()
    async with _client(cluster) as c:
        answer = await c.get(
            "/v1/kernel-log?since=1&until=2", headers={"authorization": f"Bearer {READ}"}
        )
        assert answer.status_code == 503
        assert answer.json()["kind"] == "kernel_log_unavailable"
        agent = HttpNodeAgent(
            addresses=AgentAddresses(cluster.kube, AgentLocation(cluster="sim")),
            master=MASTER,
            transport=c._transport,
        )
        now = datetime.now(UTC)
        with pytest.raises(GpubotError):
            await agent.kernel_log(node=NODE, since=now, until=now)
        await agent.aclose()
