"""The node agent observed: a log line per refusal, action and XID event, and /metrics."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import platform
import re
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from agent_observe_harness import (
    MUTATE,
    NODE,
    READ,
    WRONG,
    agent_opts,
    log_lines,
    sample,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpubot import __version__
from gpubot.agent.api import AgentTokens
from gpubot.agent.metrics import AgentMetrics
from gpubot.agent.server import build_agent_app
from gpubot.agent.simulated import SimulatedDriver
from gpubot.agent.xid_watcher import BotEventSender
from gpubot.backends.simulated import SimulatedCluster
from gpubot.clock import FakeClock
from gpubot.logs import configure_logging


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
    app = build_agent_app(SimulatedDriver(cluster.agent, node=NODE), agent_opts(), metrics=metrics)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://agent",
        headers={"authorization": f"Bearer {MUTATE}"},
    ) as client:
        yield client


# -- refusals in the log ------------------------------------------------------------------


async def test_a_refused_request_logs_one_line_without_any_token(
    agent: httpx.AsyncClient, text_log: io.StringIO
) -> None:
    r = await agent.get("/v1/gpus", headers={"authorization": f"Bearer {WRONG}"})
    assert r.status_code == 401
    [line] = log_lines(text_log, "agent.refused")
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
    [line] = log_lines(text_log, "agent.refused")
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
    assert sample(text, 'gpubot_agent_requests_total{outcome="unauthorized",route="/v1/gpus"}') == 1
    assert (
        sample(text, 'gpubot_agent_requests_total{outcome="ok",route="/v1/gpus/{index}/reset"}')
        == 1
    )
    assert (
        sample(text, 'gpubot_agent_requests_total{outcome="in_use",route="/v1/gpus/{index}/reset"}')
        == 1
    )
    assert sample(text, 'gpubot_agent_gpu_resets_total{outcome="healthy"}') == 1
    assert sample(text, 'gpubot_agent_gpu_resets_total{outcome="in_use"}') == 1
    assert sample(text, 'gpubot_agent_xid_events_total{outcome="failed"}') == 0
    [done] = log_lines(text_log, "agent.reset")[:1]
    assert "GPU 5 reset; it reads healthy again" in done
    assert "result=healthy" in done
    # The refused reset is its action's line only: the one agent.refused line is the 401.
    [refusal] = log_lines(text_log, "agent.refused")
    assert "401" in refusal
    refused = [line for line in log_lines(text_log, "agent.reset") if "result=in_use" in line]
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
    assert sample(text, f'{series}{{action="set",outcome="changed"}}') == 1
    assert sample(text, f'{series}{{action="restore",outcome="changed"}}') == 1
    # 9 W fails pydantic's check (gt 0 passes, range check is the agent's): out_of_range
    assert sample(text, f'{series}{{action="set",outcome="out_of_range"}}') == 1
    lines = log_lines(text_log, "agent.power_limit")
    assert len(lines) == 3
    assert "GPU 1 power limit set: 700.0 W to 450.0 W" in lines[0]
    assert "GPU 1 power limit restore: 450.0 W to 700.0 W" in lines[1]
    assert "result=out_of_range" in lines[2]


async def test_a_diagnostic_is_logged_with_its_result(
    cluster: SimulatedCluster, text_log: io.StringIO, metrics: AgentMetrics
) -> None:
    driver = SimulatedDriver(cluster.agent, node="gpu-node-16")
    opts = agent_opts(
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
    assert sample(text, f'gpubot_agent_diagnostics_total{{result="{result}"}}') == 1
    [line] = log_lines(text_log, "agent.diag")
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
    [line] = log_lines(text_log, event)
    assert "XID 79 on GPU 3" in line
    assert f"result={outcome}" in line
    assert len(text_log.getvalue().splitlines()) == 1
    text = metrics.exposition().decode()
    assert sample(text, f'gpubot_agent_xid_events_total{{outcome="{outcome}"}}') == 1


async def test_an_xid_event_the_bot_never_takes_is_dropped_with_one_error_line(
    text_log: io.StringIO, metrics: AgentMetrics
) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(503))
    clock = FakeClock()
    sender = BotEventSender(
        bot_url="http://bot",
        token=READ,
        transport=transport,
        retry_delay_s=2.0,
        attempts=3,
        counted=lambda o: metrics.xid_event(outcome=o),
        clock=clock,
    )
    await sender(_xid_body())
    await sender.aclose()
    assert clock.slept == [2.0, 4.0]  # waits longer after each failure, on fake time
    assert len(log_lines(text_log, "agent.xid_retry")) == 3
    [line] = log_lines(text_log, "agent.xid_failed")
    assert "dropped after 3 attempts: HTTP 503" in line
    text = metrics.exposition().decode()
    assert sample(text, 'gpubot_agent_xid_events_total{outcome="failed"}') == 1


async def test_metrics_carry_the_build_and_the_process(agent: httpx.AsyncClient) -> None:
    """gpubot_build_info is 1 with this version and Python; the process_* and python_* series
    of prometheus_client's collectors are in the agent's own registry, with no token."""
    agent.headers.pop("authorization")
    text = (await agent.get("/metrics")).text
    build = f'gpubot_build_info{{python="{platform.python_version()}",version="{__version__}"}}'
    assert sample(text, build) == 1
    assert (sample(text, "process_cpu_seconds_total") or 0) > 0
    assert (sample(text, "process_resident_memory_bytes") or 0) > 0
    assert 'python_info{implementation="' in text
    assert 'python_gc_collections_total{generation="0"}' in text


def _xid_body() -> dict[str, object]:
    labels = {"gpu": "3", "xid": "79", "Hostname": NODE}
    return {"alerts": [{"labels": labels}]}


def test_metrics_reference_lists_every_agent_metric_and_no_other(metrics: AgentMetrics) -> None:
    """Every gpubot_agent_* series has its row in the generated metrics reference."""
    reference = Path(__file__).parents[3] / "docs" / "reference" / "metrics.md"
    page = reference.read_text(encoding="utf-8").split("## `gpubot agent`", 1)[1]
    documented = set(re.findall(r"^\| `(gpubot_agent_[a-z_]+)` \|", page, flags=re.M))
    names = {m.name + ("_total" if m.type == "counter" else "") for m in metrics.registry.collect()}
    assert documented == {n for n in names if n.startswith("gpubot_agent_")}


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
        SimulatedDriver(cluster.agent, node=NODE), agent_opts(), metrics=AgentMetrics()
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
