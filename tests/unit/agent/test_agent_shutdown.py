"""The node agent's start and stop: one line each, SIGTERM logged, work under way finished."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import threading

import httpx
import pytest
from agent_observe_harness import (
    MUTATE,
    NODE,
    agent_opts,
)

from gpubot.agent.server import serve_agent
from gpubot.agent.simulated import SimulatedDriver
from gpubot.backends.simulated import SimulatedCluster


@pytest.fixture
def cluster() -> SimulatedCluster:
    return SimulatedCluster.default()


# -- start and SIGTERM ------------------------------------------------------------------------


async def test_sigterm_logs_the_shutdown_and_the_agent_stops(
    cluster: SimulatedCluster, caplog: pytest.LogCaptureFixture
) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    caplog.set_level(logging.INFO, logger="gpubot")
    driver = SimulatedDriver(cluster.agent, node=NODE)
    task = asyncio.create_task(
        serve_agent(driver, driver, agent_opts(port=port, bot_url=None), sock=sock)
    )
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        for _ in range(200):  # until it answers (it binds in a moment)
            try:
                if (await client.get("/healthz")).status_code == 200:
                    break
            except httpx.TransportError:
                await asyncio.sleep(0.02)
        assert (await client.get("/readyz")).text == "NVML answers: 8 GPU(s)"
    signal.raise_signal(signal.SIGTERM)
    await asyncio.wait_for(task, timeout=10)
    events = [getattr(r, "event", None) for r in caplog.records]
    events = [e for e in events if e and e.startswith("agent.") and e != "agent.refused"]
    assert events == [
        "agent.start",
        "agent.no_bot_url",
        "agent.ready",
        "agent.stopping",
        "agent.stopped",
    ]
    start = caplog.records[0]
    stopping = next(r for r in caplog.records if getattr(r, "event", "") == "agent.stopping")
    assert start.getMessage() == (
        f"agent for node {NODE} starting: simulated driver 550.54.15, 8 GPU(s), listening on "
        f"127.0.0.1:{port}, mutating, bot unset (XID events not forwarded)"
    )
    assert stopping.getMessage().startswith("SIGTERM received: stopping")


async def test_sigterm_during_a_reset_lets_it_finish_and_answer_before_the_agent_stops(
    cluster: SimulatedCluster, caplog: pytest.LogCaptureFixture
) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    entered, go = threading.Event(), threading.Event()

    class SlowReset(SimulatedDriver):
        def reset(self, *, index: int, timeout_s: float, uuid: str | None = None) -> str:
            entered.set()
            go.wait(10)  # nvidia-smi -r under way
            return super().reset(index=index, timeout_s=timeout_s, uuid=uuid)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    caplog.set_level(logging.INFO, logger="gpubot")
    driver = SlowReset(cluster.agent, node=NODE)
    task = asyncio.create_task(serve_agent(driver, driver, agent_opts(port=port), sock=sock))
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", headers={"authorization": f"Bearer {MUTATE}"}
    ) as client:
        for _ in range(200):  # until it answers (it binds in a moment)
            try:
                if (await client.get("/healthz")).status_code == 200:
                    break
            except httpx.TransportError:
                await asyncio.sleep(0.02)
        reset = asyncio.create_task(client.post("/v1/gpus/6/reset", json={}, timeout=10))
        assert await asyncio.to_thread(entered.wait, 5)
        signal.raise_signal(signal.SIGTERM)
        assert any(getattr(r, "event", "") == "agent.stopping" for r in caplog.records)
        go.set()
        answer = await reset
    await asyncio.wait_for(task, timeout=10)
    assert answer.status_code == 200
    assert answer.json()["healthy"] is True
    events = [e for r in caplog.records if (e := getattr(r, "event", "")).startswith("agent.")]
    assert (
        events.index("agent.stopping") < events.index("agent.reset") < events.index("agent.stopped")
    )
