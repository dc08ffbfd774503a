"""POST /agent/events: an agent's token is good for events about its own node only."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from gpubot.agent.driver import XidEvent
from gpubot.agent.xid_watcher import xid_alert
from gpubot.domain.control.agent_tokens import node_token
from gpubot.web.app import create_app

MakeHarness = Any  # the `harness` fixture in conftest.py
RUNBOOK = """
name: xid-quarantine
description: cordon a node whose GPU reported an XID
triggers:
  - alertname: GPUXidError
params:
  node: {type: node, default: "{{ alert.labels.Hostname }}"}
target: node
steps:
  - id: cordon
    action: node.cordon
    args: {node: "{{ params.node }}"}
    approval: auto
"""
MASTER = "bot-master-secret"
NODE_A, NODE_B = "gpu-node-03", "gpu-node-04"


def _body(*nodes: str, label: str = "Hostname") -> dict[str, Any]:
    event = XidEvent(gpu=1, uuid="GPU-1", xid=79, at=datetime(2026, 11, 22, 9, tzinfo=UTC))
    bodies = [xid_alert(event, node=n, cluster="sim", window_s=300) for n in nodes]
    alerts = [a for b in bodies for a in b["alerts"]]
    if label != "Hostname":
        for a in alerts:
            a["labels"][label] = a["labels"].pop("Hostname")
    return {**bodies[0], "alerts": alerts}


def _smuggled() -> dict[str, Any]:
    """Its own node in Hostname, another in a second node label."""
    body = _body(NODE_A)
    body["alerts"][0]["labels"]["kubernetes_node"] = NODE_B
    return body


def _auth(node: str, scope: str = "read") -> dict[str, str]:
    return {"authorization": f"Bearer {node_token(master=MASTER, node=node, scope=scope)}"}  # type: ignore[arg-type]


async def _post(h: Any, body: Any, headers: dict[str, str]) -> httpx.Response:
    app = create_app(h.service, agent_token=MASTER)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://bot"
    ) as c:
        return await c.post("/agent/events", json=body, headers=headers)


@pytest.mark.parametrize("scope", ["read", "mutate"])
async def test_an_agent_posts_events_for_its_own_node(harness: MakeHarness, scope: str) -> None:
    h = harness(RUNBOOK)
    r = await _post(h, _body(NODE_A), _auth(NODE_A, scope))
    assert r.status_code == 200, r.text
    await h.service.wait_idle()
    [incident] = await h.store.list_incidents()
    assert incident.node == NODE_A


@pytest.mark.parametrize(
    ("body", "status", "why"),
    [
        (_body(NODE_B), 403, "not node gpu-node-04's"),  # another node's event
        (_body(NODE_A, NODE_B), 403, "not node gpu-node-04's"),  # one forged alert in a batch
        # The node in a label the agent's watcher never sets: no Hostname, not an XID event.
        (_body(NODE_B, label="node"), 400, "names no node"),
        (_body(NODE_B, label="kubernetes_node"), 400, "names no node"),
        (_smuggled(), 403, "label 'kubernetes_node' is not one an agent sends"),
        (_body("127.0.0.1"), 403, "not node 127.0.0.1's"),
    ],
)
async def test_node_a_cannot_post_events_for_another_node(
    harness: MakeHarness, body: dict[str, Any], status: int, why: str
) -> None:
    h = harness(RUNBOOK)
    r = await _post(h, body, _auth(NODE_A, "mutate"))
    assert r.status_code == status
    assert why in r.json()["error"]
    await h.service.wait_idle()
    assert await h.store.list_incidents() == []
    assert not (await h.cluster.kube.get_node(node=NODE_B)).unschedulable


async def test_an_event_must_name_its_node(harness: MakeHarness) -> None:
    h = harness(RUNBOOK)
    body = _body(NODE_A)
    del body["alerts"][0]["labels"]["Hostname"]
    r = await _post(h, body, _auth(NODE_A))
    assert r.status_code == 400
    assert "names no node" in r.json()["error"]
    assert (await _post(h, {**body, "alerts": []}, _auth(NODE_A))).status_code == 403
    r = await _post(h, _body("evil.example:80/x"), _auth(NODE_A))
    assert r.status_code == 400
    assert await h.store.list_incidents() == []


async def test_the_master_and_junk_are_not_agent_tokens(harness: MakeHarness) -> None:
    h = harness(RUNBOOK)
    for headers in (
        {},
        {"authorization": f"Bearer {MASTER}"},
        {"authorization": "Bearer " + "0" * 64},
        {"authorization": _auth(NODE_A)["authorization"].replace("Bearer", "Basic")},
    ):
        r = await _post(h, _body(NODE_A), headers)
        assert r.status_code in (401, 403), headers
    assert await h.store.list_incidents() == []


async def test_nested_json_in_an_event_is_400(harness: MakeHarness) -> None:
    h = harness(RUNBOOK)
    app = create_app(h.service, agent_token=MASTER)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://bot"
    ) as c:
        r = await c.post("/agent/events", content=b"[" * 5000, headers=_auth(NODE_A))
    assert r.status_code == 400
