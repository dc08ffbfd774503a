"""The node agent observed: its log lines, its /metrics and its readiness (NVML answers)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import signal
import socket
import threading
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from fake_nvml_build import build_fake_nvml, run_with_fake_nvml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpubot.agent.api import AgentTokens
from gpubot.agent.driver import GpuDriverError, SystemInfo
from gpubot.agent.metrics import AgentMetrics
from gpubot.agent.readiness import Readiness
from gpubot.agent.server import AgentOptions, build_agent_app, serve_agent
from gpubot.agent.simulated import SimulatedDriver
from gpubot.agent.xid_watcher import BotEventSender
from gpubot.backends.simulated import SimulatedCluster
from gpubot.domain.agent_tokens import node_token
from gpubot.logs import configure_logging

MASTER = "s3cret-agent-master"
NODE = "gpu-node-12"  # runs idle pods: GPUs 0-4 held, 5-7 free
MUTATE = node_token(master=MASTER, node=NODE, scope="mutate")
READ = node_token(master=MASTER, node=NODE, scope="read")
WRONG = "wrong-but-long-token-value-0123456789"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _opts(**kw: object) -> AgentOptions:
    base: dict[str, object] = {
        "tokens": AgentTokens(read=READ, mutate=MUTATE),
        "node": NODE,
        "cluster": "sim",
        "host": "127.0.0.1",
        "port": 0,
        "driver_name": "simulated",
    }
    return AgentOptions(**{**base, **kw})  # type: ignore[arg-type]


@pytest.fixture
def cluster() -> SimulatedCluster:
    return SimulatedCluster.default()


@pytest.fixture
def metrics() -> AgentMetrics:
    return AgentMetrics()


@pytest.fixture
def text_log() -> Iterator[io.StringIO]:
    """gpubot's own text format on a stream, the agent's tokens among the secrets."""
    stream = io.StringIO()
    handler = configure_logging(fmt="text", level="info", secrets=[READ, MUTATE], stream=stream)
    try:
        yield stream
    finally:
        logging.getLogger().removeHandler(handler)


@pytest.fixture
async def agent(
    cluster: SimulatedCluster, metrics: AgentMetrics
) -> AsyncIterator[httpx.AsyncClient]:
    app = build_agent_app(SimulatedDriver(cluster.agent, node=NODE), _opts(), metrics=metrics)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://agent",
        headers={"authorization": f"Bearer {MUTATE}"},
    ) as client:
        yield client


def _lines(stream: io.StringIO, event: str) -> list[str]:
    return [line for line in stream.getvalue().splitlines() if f"event={event}" in line]


def _sample(text: str, series: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


# -- refusals in the log ------------------------------------------------------------------


async def test_a_refused_request_logs_one_line_without_any_token(
    agent: httpx.AsyncClient, text_log: io.StringIO
) -> None:
    r = await agent.get("/v1/gpus", headers={"authorization": f"Bearer {WRONG}"})
    assert r.status_code == 401
    [line] = _lines(text_log, "agent.refused")
    assert "refused GET /v1/gpus: 401 missing or wrong bearer token for node gpu-node-12" in line
    assert "status=401" in line
    assert "result=unauthorized" in line
    out = text_log.getvalue()
    assert WRONG not in out
    assert READ not in out
    assert MUTATE not in out


async def test_a_read_token_on_an_action_is_logged_as_forbidden(
    agent: httpx.AsyncClient, text_log: io.StringIO
) -> None:
    r = await agent.post("/v1/gpus/5/reset", json={}, headers={"authorization": f"Bearer {READ}"})
    assert r.status_code == 403
    [line] = _lines(text_log, "agent.refused")
    assert "/v1/gpus/{index}/reset: 403" in line
    assert "result=forbidden" in line
    assert READ not in text_log.getvalue()


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        (
            "POST",
            "/v1/gpus/0/reset",
            b'{"uuid": "GPU-1\\n2026-11-25 09:00:00,000 INFO forged: \\u001b[31mowned"}',
        ),
        ("POST", "/v1/gpus/0/power-limit", b'{"watts": 300, "x\\nINFO forged": 1}'),
        ("GET", "/v1/gpus/%0a2026-11-25%20INFO%20forged", b""),
        ("GET", "/v1/%1b[31mgpus", b""),
        ("POST", "/v1/diag", b"\xff\xfe{not json\n INFO forged"),
    ],
)
async def test_hostile_request_data_cannot_forge_a_log_line_or_a_series(
    agent: httpx.AsyncClient,
    text_log: io.StringIO,
    metrics: AgentMetrics,
    method: str,
    path: str,
    body: bytes,
) -> None:
    r = await agent.request(method, path, content=body)
    assert 400 <= r.status_code < 500, r.text
    out = text_log.getvalue()
    lines = out.splitlines()
    assert len(lines) == 1, out  # one record, one line: nothing forged
    assert "event=agent.refused" in lines[0]
    assert "\x1b" not in out
    exposition = metrics.exposition().decode()
    assert "forged" not in exposition
    assert "\\x1b" not in exposition


# -- actions in the log and in /metrics ----------------------------------------------------


async def test_metrics_count_a_refused_request_and_a_reset(
    agent: httpx.AsyncClient, text_log: io.StringIO
) -> None:
    assert (
        await agent.get("/v1/gpus", headers={"authorization": "Bearer nope"})
    ).status_code == 401
    assert (await agent.post("/v1/gpus/5/reset", json={})).status_code == 200  # free GPU
    assert (await agent.post("/v1/gpus/0/reset", json={})).status_code == 409  # held GPU
    agent.headers.pop("authorization")
    r = await agent.get("/metrics")  # no token: Prometheus sends none
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert (
        _sample(text, 'gpubot_agent_requests_total{outcome="unauthorized",route="/v1/gpus"}') == 1
    )
    assert (
        _sample(text, 'gpubot_agent_requests_total{outcome="ok",route="/v1/gpus/{index}/reset"}')
        == 1
    )
    assert (
        _sample(
            text, 'gpubot_agent_requests_total{outcome="in_use",route="/v1/gpus/{index}/reset"}'
        )
        == 1
    )
    assert _sample(text, 'gpubot_agent_gpu_resets_total{outcome="healthy"}') == 1
    assert _sample(text, 'gpubot_agent_gpu_resets_total{outcome="in_use"}') == 1
    assert _sample(text, 'gpubot_agent_xid_events_total{outcome="failed"}') == 0
    [done] = _lines(text_log, "agent.reset")[:1]
    assert "GPU 5 reset; it reads healthy again" in done
    assert "result=healthy" in done
    # The refused reset is its action's line only: the one agent.refused line is the 401.
    [refusal] = _lines(text_log, "agent.refused")
    assert "401" in refusal
    refused = [line for line in _lines(text_log, "agent.reset") if "result=in_use" in line]
    assert len(refused) == 1
    assert "GPU 0" in refused[0]


async def test_power_limit_changes_and_refusals_are_logged_and_counted(
    agent: httpx.AsyncClient, text_log: io.StringIO, metrics: AgentMetrics
) -> None:
    assert (await agent.post("/v1/gpus/1/power-limit", json={"watts": 450})).status_code == 200
    assert (await agent.post("/v1/gpus/1/power-limit/restore", json={})).status_code == 200
    assert (await agent.post("/v1/gpus/1/power-limit", json={"watts": 9})).status_code == 422
    text = metrics.exposition().decode()
    series = "gpubot_agent_power_limit_changes_total"
    assert _sample(text, f'{series}{{action="set",outcome="changed"}}') == 1
    assert _sample(text, f'{series}{{action="restore",outcome="changed"}}') == 1
    # 9 W fails pydantic's check (gt 0 passes, range check is the agent's): out_of_range
    assert _sample(text, f'{series}{{action="set",outcome="out_of_range"}}') == 1
    lines = _lines(text_log, "agent.power_limit")
    assert len(lines) == 3
    assert "GPU 1 power limit set: 700.0 W to 450.0 W" in lines[0]
    assert "GPU 1 power limit restore: 450.0 W to 700.0 W" in lines[1]
    assert "result=out_of_range" in lines[2]


async def test_a_diagnostic_is_logged_with_its_result(
    cluster: SimulatedCluster, text_log: io.StringIO, metrics: AgentMetrics
) -> None:
    driver = SimulatedDriver(cluster.agent, node="gpu-node-16")
    opts = _opts(
        node="gpu-node-16",
        tokens=AgentTokens(read="r" * 20, mutate="m" * 20),
        diagnostics=driver,
    )
    app = build_agent_app(driver, opts, metrics=metrics)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://agent",
        headers={"authorization": f"Bearer {'m' * 20}"},
    ) as client:
        r = await client.post("/v1/diag", json={"level": 1, "gpus": [7]})
    assert r.status_code in (200, 409), r.text
    text = metrics.exposition().decode()
    if r.status_code == 200:
        result = "passed" if r.json()["passed"] else "failed"
    else:
        result = r.json()["kind"]
    assert _sample(text, f'gpubot_agent_diagnostics_total{{result="{result}"}}') == 1
    [line] = _lines(text_log, "agent.diag")
    assert f"result={result}" in line


# -- XID events -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "outcome", "event"),
    [(200, "forwarded", "agent.xid_forwarded"), (403, "refused", "agent.xid_failed")],
)
async def test_an_xid_event_forwarded_or_refused_is_one_line_and_one_count(
    text_log: io.StringIO, metrics: AgentMetrics, status: int, outcome: str, event: str
) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(status, text="no\nINFO x"))
    sender = BotEventSender(
        bot_url="http://bot",
        token=READ,
        transport=transport,
        retry_delay_s=0,
        counted=lambda o: metrics.xid_event(outcome=o),
    )
    await sender(_xid_body())
    await sender.aclose()
    [line] = _lines(text_log, event)
    assert "XID 79 on GPU 3" in line
    assert f"result={outcome}" in line
    assert len(text_log.getvalue().splitlines()) == 1
    text = metrics.exposition().decode()
    assert _sample(text, f'gpubot_agent_xid_events_total{{outcome="{outcome}"}}') == 1


async def test_an_xid_event_the_bot_never_takes_is_dropped_with_one_error_line(
    text_log: io.StringIO, metrics: AgentMetrics
) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(503))
    sender = BotEventSender(
        bot_url="http://bot",
        token=READ,
        transport=transport,
        retry_delay_s=0,
        attempts=3,
        counted=lambda o: metrics.xid_event(outcome=o),
    )
    await sender(_xid_body())
    await sender.aclose()
    assert len(_lines(text_log, "agent.xid_retry")) == 3
    [line] = _lines(text_log, "agent.xid_failed")
    assert "dropped after 3 attempts: HTTP 503" in line
    text = metrics.exposition().decode()
    assert _sample(text, 'gpubot_agent_xid_events_total{outcome="failed"}') == 1


def _xid_body() -> dict[str, object]:
    labels = {"gpu": "3", "xid": "79", "Hostname": NODE}
    return {"alerts": [{"labels": labels}]}


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
    clock.now += 4.9
    assert (await ready.verdict()).ready  # the cached answer: NVML not asked
    assert driver.calls == 1
    clock.now += 0.2
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
        clock.now += 6
        await ready.verdict()
        clock.now += 6
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines == [
        ("INFO", "ready: NVML answers: 8 GPU(s)"),
        ("ERROR", "not ready: NVML: gone (gpu_lost)"),
        ("INFO", "ready: NVML answers: 8 GPU(s)"),
    ]


async def test_readiness_gives_up_on_a_hung_driver_and_asks_it_only_once() -> None:
    driver, clock = _Driver(), FakeClock()
    driver.release.clear()  # system() blocks until released
    ready = Readiness(lambda: driver.system().gpu_count, clock=clock, ttl_s=5, timeout_s=0.05)
    first = await ready.verdict()
    assert (first.ready, first.reason) == (False, "NVML did not answer within 0.05 s")
    clock.now += 10
    assert not (await ready.verdict()).ready
    assert driver.calls == 1  # the second probe waited on the same call
    driver.release.set()
    clock.now += 10
    assert (await ready.verdict()).ready


async def test_readyz_is_503_with_one_line_when_the_driver_raises(
    cluster: SimulatedCluster, metrics: AgentMetrics
) -> None:
    class Broken(SimulatedDriver):
        def system(self) -> SystemInfo:
            raise GpuDriverError("NVML init: driver gone\nsecond line", kind="driver_not_loaded")

    app = build_agent_app(Broken(cluster.agent, node=NODE), _opts(), metrics=metrics)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://agent"
    ) as client:
        r = await client.get("/readyz")
        assert (r.status_code, r.text) == (503, "NVML: NVML init: driver gone (driver_not_loaded)")
        assert (await client.get("/healthz")).status_code == 200  # alive, not ready
        text = (await client.get("/metrics")).text
    series = 'gpubot_agent_nvml_errors_total{call="system",kind="driver_not_loaded"}'
    assert _sample(text, series) == 1
    assert _sample(text, 'gpubot_agent_requests_total{outcome="5xx",route="/readyz"}') == 1


READYZ_ON_FAKE_NVML = """
import asyncio, json
import httpx, pynvml
from gpubot.agent.api import AgentTokens
from gpubot.agent.metrics import AgentMetrics
from gpubot.agent.nvml import NvmlDriver
from gpubot.agent.server import AgentOptions, build_agent_app

class Clock:
    now = 0.0
    def __call__(self):
        return self.now

async def main():
    clock = Clock()
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
                clock.now += 10
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


def test_readme_lists_every_agent_metric_and_no_other(metrics: AgentMetrics) -> None:
    readme = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(gpubot_agent_[a-z_]+)` \|", readme, flags=re.M))
    exported = {
        m.name + ("_total" if m.type == "counter" else "") for m in metrics.registry.collect()
    }
    assert documented == exported


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
        serve_agent(driver, driver, _opts(port=port, bot_url=None), sock=sock)
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


# -- hostile requests, generated ------------------------------------------------------------

_PATHS = st.one_of(
    st.sampled_from(
        [
            "/v1/gpus/{i}/reset",
            "/v1/gpus/{i}/power-limit",
            "/v1/gpus/{i}/power-limit/restore",
            "/v1/diag",
            "/v1/gpus/{i}/processes",
            "/metrics",
        ]
    ).flatmap(lambda p: st.integers(0, 99).map(lambda i: p.replace("{i}", str(i)))),
    st.text(st.characters(codec="utf-8"), max_size=40).map(
        lambda t: "/v1/" + urllib.parse.quote(t, safe="")
    ),
)
_BODIES = st.one_of(
    st.binary(max_size=64),
    st.dictionaries(
        st.sampled_from(["watts", "uuid", "dry_run", "level", "gpus", "x\n\x1b"]),
        st.one_of(st.integers(-5, 900), st.text(max_size=20), st.booleans(), st.none()),
        max_size=3,
    ).map(lambda d: json.dumps(d).encode()),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=_PATHS, body=_BODIES, token=st.sampled_from([MUTATE, READ, WRONG, ""]))
def test_any_post_is_answered_without_a_5xx_and_logged_in_at_most_one_line(
    path: str, body: bytes, token: str
) -> None:
    cluster = SimulatedCluster.default()
    stream = io.StringIO()
    handler = configure_logging(fmt="text", level="info", secrets=[READ, MUTATE], stream=stream)
    app = build_agent_app(
        SimulatedDriver(cluster.agent, node=NODE), _opts(), metrics=AgentMetrics()
    )

    async def post() -> httpx.Response:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://agent"
        ) as client:
            headers = {"authorization": f"Bearer {token}"} if token else {}
            return await client.post(path, content=body, headers=headers)

    try:
        r = asyncio.run(post())
    finally:
        logging.getLogger().removeHandler(handler)
    assert r.status_code < 500, r.text
    lines = stream.getvalue().splitlines()
    assert len(lines) <= 1, stream.getvalue()  # one record, one line: nothing forged
    if r.status_code >= 400:
        assert len(lines) == 1, stream.getvalue()  # every refusal is in the log
    assert "\x1b" not in stream.getvalue()
    for secret in (READ, MUTATE, WRONG):
        assert secret not in stream.getvalue()


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
    task = asyncio.create_task(serve_agent(driver, driver, _opts(port=port), sock=sock))
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
