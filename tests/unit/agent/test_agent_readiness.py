"""The node agent's readiness: /readyz is 200 only while NVML answers, the verdict cached."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

import httpx
import pytest
from agent_observe_harness import (
    NODE,
    agent_opts,
    sample,
)
from fake_nvml_build import build_fake_nvml, run_with_fake_nvml

from gpubot.agent.driver import GpuDriverError, SystemInfo
from gpubot.agent.metrics import AgentMetrics
from gpubot.agent.readiness import Readiness
from gpubot.agent.server import build_agent_app
from gpubot.agent.simulated import SimulatedDriver
from gpubot.backends.simulated import SimulatedCluster
from gpubot.clock import FakeClock


@pytest.fixture
def cluster() -> SimulatedCluster:
    return SimulatedCluster.default()


@pytest.fixture
def metrics() -> AgentMetrics:
    return AgentMetrics()


# -- readiness ------------------------------------------------------------------------------


class _Driver:
    """A GpuDriver's system() that answers, raises or hangs as a test sets it."""

    def __init__(self) -> None:
        self.calls = 0
        self.error: GpuDriverError | None = None
        self.release = threading.Event()
        self.release.set()

    def system(self) -> SystemInfo:
        self.calls += 1
        self.release.wait(5)
        if self.error is not None:
            raise self.error
        return SystemInfo(driver_version="550.54.15", cuda_driver_version="12.4", gpu_count=8)


async def test_readiness_is_kept_for_its_ttl_then_asked_again() -> None:
    driver, clock = _Driver(), FakeClock()
    ready = Readiness(lambda: driver.system().gpu_count, clock=clock, ttl_s=5)
    assert (await ready.verdict()).ready
    driver.error = GpuDriverError(
        "NVML: the NVIDIA kernel module is not loaded", kind="driver_not_loaded"
    )
    clock.advance(4.9)
    assert (await ready.verdict()).ready  # the cached answer: NVML not asked
    assert driver.calls == 1
    clock.advance(0.2)
    verdict = await ready.verdict()
    assert not verdict.ready
    assert verdict.reason == (
        "NVML: NVML: the NVIDIA kernel module is not loaded (driver_not_loaded)"
    )
    assert driver.calls == 2


async def test_readiness_logs_each_change_once_not_each_probe(
    caplog: pytest.LogCaptureFixture,
) -> None:
    driver, clock = _Driver(), FakeClock()
    ready = Readiness(lambda: driver.system().gpu_count, clock=clock, ttl_s=5)
    caplog.set_level(logging.INFO, logger="gpubot.agent.readiness")
    for error in (None, None, GpuDriverError("gone", kind="gpu_lost"), None):
        driver.error = error
        for _ in range(3):  # probes within one TTL, and one after it
            await ready.verdict()
        clock.advance(6)
        await ready.verdict()
        clock.advance(6)
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines == [
        ("INFO", "ready: NVML answers: 8 GPU(s)"),
        ("ERROR", "not ready: NVML: gone (gpu_lost)"),
        ("INFO", "ready: NVML answers: 8 GPU(s)"),
    ]


async def test_readiness_gives_up_on_a_hung_driver_and_asks_it_only_once() -> None:
    driver, clock = _Driver(), FakeClock()
    driver.release.clear()  # system() blocks until released
    ready = Readiness(lambda: driver.system().gpu_count, clock=clock, ttl_s=5, timeout_s=2)
    asking = asyncio.ensure_future(ready.verdict())
    await clock.until_sleeping(1)  # the probe waits for NVML, for 2 s of the clock
    assert not asking.done()
    await clock.run_for(2)
    first = await asking
    assert (first.ready, first.reason) == (False, "NVML did not answer within 2 s")
    clock.advance(10)
    asking = asyncio.ensure_future(ready.verdict())
    await clock.until_sleeping(1)
    await clock.run_for(2)
    assert not (await asking).ready
    assert driver.calls == 1  # the second probe waited on the same call
    driver.release.set()
    clock.advance(10)
    assert (await ready.verdict()).ready


async def test_readyz_is_503_with_one_line_when_the_driver_raises(
    cluster: SimulatedCluster, metrics: AgentMetrics
) -> None:
    class Broken(SimulatedDriver):
        def system(self) -> SystemInfo:
            raise GpuDriverError("NVML init: driver gone\nsecond line", kind="driver_not_loaded")

    app = build_agent_app(Broken(cluster.agent, node=NODE), agent_opts(), metrics=metrics)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://agent"
    ) as client:
        r = await client.get("/readyz")
        assert (r.status_code, r.text) == (503, "NVML: NVML init: driver gone (driver_not_loaded)")
        assert (await client.get("/healthz")).status_code == 200  # alive, not ready
        text = (await client.get("/metrics")).text
    series = 'gpubot_agent_nvml_errors_total{call="system",kind="driver_not_loaded"}'
    assert sample(text, series) == 1
    assert sample(text, 'gpubot_agent_requests_total{outcome="5xx",route="/readyz"}') == 1


READYZ_ON_FAKE_NVML = """
import asyncio, json
import httpx, pynvml
from gpubot.agent.api import AgentTokens
from gpubot.agent.metrics import AgentMetrics
from gpubot.agent.nvml import NvmlDriver
from gpubot.agent.server import AgentOptions, build_agent_app
from gpubot.clock import FakeClock


async def main():
    clock = FakeClock()
    opts = AgentOptions(tokens=AgentTokens(read="r" * 20), node="n", cluster="c",
                        host="127.0.0.1", port=0)
    app = build_agent_app(NvmlDriver(), opts, metrics=AgentMetrics(), clock=clock)
    out = []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://agent") as client:
        for step in ("up", "cached", "down"):
            if step == "cached":
                pynvml.nvmlShutdown()  # the driver stops answering
            if step == "down":
                clock.advance(10)
            r = await client.get("/readyz")
            out.append([r.status_code, r.text])
    print(json.dumps(out))

asyncio.run(main())
"""


def test_readyz_on_the_real_bindings_follows_the_fake_nvml(tmp_path: Path) -> None:
    lib = build_fake_nvml(tmp_path / "nvml")
    up, cached, down = run_with_fake_nvml(lib, READYZ_ON_FAKE_NVML)
    assert up == [200, "NVML answers: 2 GPU(s)"]
    assert cached == up  # within the cache: NVML not asked again
    assert down[0] == 503
    assert down[1].startswith("NVML: ")
    assert "\n" not in down[1]
