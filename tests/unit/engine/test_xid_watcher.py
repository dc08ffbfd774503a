"""XID 79 from the node agent's watcher opens an incident and quarantines, with no Prometheus."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta
from typing import Any

import httpx

from gpubot.agent.simulated import SimulatedDriver
from gpubot.agent.xid_watcher import BotEventSender, XidWatcher, xid_alert
from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.clock import FakeClock
from gpubot.domain.control.agent_tokens import node_token
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.web.app import create_app

MakeHarness = Any  # the `harness` fixture in conftest.py
# The quarantine half of runbooks/xid79.yaml, inline so this test does not follow its later steps.
XID79 = """
name: xid79-quarantine
description: quarantine a node whose GPU fell off the bus
triggers:
  - alertname: GPUXidError
    matchers: ['xid="79"']
params:
  node: {type: node, default: "{{ alert.labels.Hostname }}"}
target: node
steps:
  - id: check
    action: node.gpu_health
    args: {node: "{{ params.node }}"}
    approval: auto
  - id: cordon
    action: node.cordon
    args: {node: "{{ params.node }}"}
    approval: auto
    when: "not steps.check.output.healthy"
  - id: taint
    action: node.taint
    args: {node: "{{ params.node }}", key: gpubot.io/xid, value: "79", effect: NoSchedule}
    approval: auto
    when: "not steps.check.output.healthy"
"""
MASTER = "agent-master-secret"
NODE = "gpu-node-07"
TOKEN = node_token(master=MASTER, node=NODE, scope="read")  # what the node's agent holds


def _sender(app: Any, token: str = TOKEN) -> BotEventSender:
    return BotEventSender(
        bot_url="http://bot:8080",
        token=token,
        retry_delay_s=0,
        attempts=1,
        transport=httpx.ASGITransport(app=app),
    )


async def test_xid79_from_the_watcher_opens_an_incident_and_quarantines(
    harness: MakeHarness,
) -> None:
    h = harness(XID79)
    bot = create_app(h.service, agent_token=MASTER)
    sent: list[dict[str, Any]] = []
    sender = _sender(bot)

    async def send(body: dict[str, Any]) -> None:
        sent.append(body)
        await sender(body)

    driver = SimulatedDriver(h.cluster.agent, node=NODE)
    watcher = XidWatcher(driver, node=NODE, cluster="sim", send=send, poll_s=0.05)
    assert await watcher.run_once() is None  # nothing yet
    inject_xid(h.cluster, node=NODE, gpu=3)  # the GPU falls off the bus
    event = await watcher.run_once()
    assert event is not None
    assert (event.gpu, event.xid) == (3, 79)
    await h.service.wait_idle()
    [incident] = await h.store.list_incidents()
    assert incident.node == NODE
    [run] = await h.store.list_runs()
    status = await h.step_status(run.id)
    assert status["cordon"] == "succeeded"
    assert status["taint"] == "succeeded"
    node = await h.cluster.kube.get_node(node=NODE)
    assert node.unschedulable
    assert any(t.key == "gpubot.io/xid" for t in node.taints)
    labels = sent[0]["alerts"][0]["labels"]
    assert {k: labels[k] for k in ("alertname", "Hostname", "gpu", "xid", "severity")} == {
        "alertname": "GPUXidError",
        "Hostname": NODE,
        "gpu": "3",
        "xid": "79",
        "severity": "critical",
    }
    # The same XID again a minute later (a second watcher, e.g. after an agent restart):
    # same fingerprint and window, so the bot opens nothing new.
    again = XidWatcher(driver, node=NODE, cluster="sim", send=sender, poll_s=0.05)
    assert await again.forward(replace(event, at=event.at + timedelta(seconds=1)))
    await h.service.wait_idle()
    assert len(await h.store.list_incidents()) == 1
    assert len(await h.store.list_runs()) == 1
    # Within one watcher, a repeat is not even sent.
    assert not await watcher.forward(replace(event, at=event.at + timedelta(seconds=1)))
    await sender.aclose()


async def test_a_failing_source_pauses_one_poll_on_the_clock_and_keeps_watching() -> None:
    clock = FakeClock(auto_advance=False)
    stop = asyncio.Event()
    calls: list[float] = []

    class Flaky:
        def wait_xid(self, *, timeout_s: float) -> None:
            calls.append(clock.monotonic())
            if len(calls) == 1:
                raise RuntimeError("NVML hiccup")
            stop.set()

    async def send(body: dict[str, Any]) -> None:
        raise AssertionError("no event to send")

    watcher = XidWatcher(Flaky(), node=NODE, cluster="sim", send=send, poll_s=5.0, clock=clock)
    running = asyncio.ensure_future(watcher.run(stop))
    await clock.until_sleeping(1)
    assert calls == [0.0]  # failed once, now pausing: no second call before time moves
    await clock.run_for(5.0)
    await running
    assert calls == [0.0, 5.0]


async def test_agent_events_need_the_agent_token(harness: MakeHarness) -> None:
    h = harness(XID79)
    inject_xid(h.cluster, node=NODE, gpu=3)
    driver = SimulatedDriver(h.cluster.agent, node=NODE)
    for app in (create_app(h.service, agent_token=MASTER), create_app(h.service)):
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://bot"
        ) as c:
            body = xid_alert(
                driver.wait_xid(timeout_s=0) or _event(), node=NODE, cluster="sim", window_s=300
            )
            for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": MASTER}):
                r = await c.post("/agent/events", json=body, headers=headers)
                assert r.status_code == 401
    assert await h.store.list_incidents() == []


def _event() -> Any:
    from datetime import UTC, datetime

    from gpubot.agent.driver import XidEvent

    return XidEvent(gpu=3, uuid="GPU-x", xid=79, at=datetime(2026, 11, 22, 9, 0, tzinfo=UTC))


def test_fingerprint_is_per_gpu_xid_and_window() -> None:
    base = _event()
    one = xid_alert(base, node=NODE, cluster="sim", window_s=300)
    AlertmanagerPayload.model_validate(one)  # the bot's intake model accepts it
    fp = one["alerts"][0]["fingerprint"]

    def fingerprint(**changes: Any) -> str:
        alert = xid_alert(replace(base, **changes), node=NODE, cluster="sim", window_s=300)
        return str(alert["alerts"][0]["fingerprint"])

    assert fingerprint(at=base.at + timedelta(seconds=299)) == fp
    assert fingerprint(at=base.at + timedelta(seconds=300)) != fp
    assert fingerprint(gpu=2) != fp
    assert fingerprint(xid=48) != fp
