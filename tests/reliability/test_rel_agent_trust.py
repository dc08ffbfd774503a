"""Attacks on the node agent's trust boundary, against real `gpubot serve` and `gpubot agent`.

An alert whose node label is an address must not make the bot call it; a token taken from
one node must not act on another or post its events; a read token must not act; concurrent
resets of one GPU run one at a time; hostile JSON is a 400.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from reliability_procs import (
    Procs,
    answers,
    clean_env,
    free_port,
    serve,
    wait_until,
    write_config,
)

from gpubot.backends.store import open_store
from gpubot.domain.control.agent_tokens import node_token
from gpubot.domain.incidents.agent_events import AGENT_EVENT_LABELS

FIXTURES = Path(__file__).parents[1] / "fixtures" / "alertmanager"
MASTER = "master-secret-of-the-bot-under-attack"
AGENT_NODE = "gpu-node-12"  # GPUs 0-4 held by pods, 5-7 free
PLAN = [sys.executable, "-m", "gpubot.cli", "plan", "--alert"]
AGENT = [sys.executable, "-m", "gpubot.cli", "agent", "--driver", "simulated"]
HOSTILE = ("127.0.0.1", "localhost", "evil.example", "gpu-node-99", "evil.example:80/x")


def _token(node: str, scope: str = "read") -> str:
    return node_token(master=MASTER, node=node, scope=scope)  # type: ignore[arg-type]


@dataclass
class Capture:
    """An HTTP server on loopback that records every request it gets."""

    port: int
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)


@pytest.fixture
def capture() -> Iterator[Capture]:
    seen = Capture(port=0)

    class Handler(BaseHTTPRequestHandler):
        def _record(self) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            seen.requests.append((self.command, self.path, headers))
            body = b'{"error": "capture server"}'
            self.send_response(404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = _record

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    seen.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield seen
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def _xid_alert(hostname: str, tmp_path: Path) -> Path:
    body = json.loads((FIXTURES / "xid79_firing.json").read_text())
    for section in (
        body["commonLabels"],
        body["groupLabels"],
        *(a["labels"] for a in body["alerts"]),
    ):
        if "Hostname" in section:
            section["Hostname"] = hostname
    for alert in body["alerts"]:
        alert["fingerprint"] = hashlib.sha256(hostname.encode()).hexdigest()[:16]
    path = tmp_path / f"alert-{len(list(tmp_path.glob('alert-*')))}.json"
    path.write_text(json.dumps(body))
    return path


def _bot_config(tmp_path: Path, *, agent_port: int) -> Path:
    return write_config(
        tmp_path / "gpubot.yaml",
        store={"url": f"sqlite:///{tmp_path / 'gpubot.db'}"},
        clusters=[{"name": "sim", "backend": "simulated", "agent": {"port": agent_port}}],
    )


def test_planning_an_alert_that_names_an_address_contacts_nothing(
    tmp_path: Path, capture: Capture
) -> None:
    """`gpubot plan` reads GPU state through the agent: for a node the cluster does not
    report, nothing is sent anywhere; for a node it reports, the cluster's address gets the
    node's own read token, never the master."""
    import subprocess

    config = _bot_config(tmp_path, agent_port=capture.port)
    env = clean_env(GPUBOT_AGENT_TOKEN=MASTER)
    for hostname in (*HOSTILE, f"127.0.0.1:{capture.port}"):
        done = subprocess.run(
            [*PLAN, str(_xid_alert(hostname, tmp_path)), "--config", str(config)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert "Traceback" not in done.stderr, done.stderr
        assert capture.requests == [], hostname
    # The control: a node the cluster reports is asked, at the address the cluster reports.
    control = subprocess.run(
        [*PLAN, str(_xid_alert("gpu-node-07", tmp_path)), "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert capture.requests, control.stdout + control.stderr
    for method, path, headers in capture.requests:
        # GPU reads, and whether DCGM can run there (the plan says so before anything runs).
        assert (method, path) in {("GET", "/v1/gpus"), ("GET", "/v1/diag/status")}
        assert headers["host"] == f"127.0.0.1:{capture.port}"
        assert headers["authorization"] == f"Bearer {_token('gpu-node-07')}"
        assert MASTER not in json.dumps(headers)


def test_served_bot_sends_nothing_for_hostile_alerts_and_refuses_forged_events(
    tmp_path: Path, capture: Capture, procs: Procs
) -> None:
    port = free_port()
    serve(
        procs, _bot_config(tmp_path, agent_port=capture.port), port=port, GPUBOT_AGENT_TOKEN=MASTER
    )
    bot = f"http://127.0.0.1:{port}"
    for hostname in HOSTILE:
        r = httpx.post(f"{bot}/alertmanager", content=_xid_alert(hostname, tmp_path).read_bytes())
        assert r.status_code < 500, r.text
    r = httpx.post(f"{bot}/alertmanager", content=_xid_alert("gpu-node-07", tmp_path).read_bytes())
    assert r.status_code == 200, r.text
    wait_until(lambda: bool(capture.requests), "the bot to ask gpu-node-07's agent")
    # Every request the bot made went to the address the cluster reports, for gpu-node-07.
    for _method, _path, headers in capture.requests:
        assert headers["authorization"] in {
            f"Bearer {_token('gpu-node-07', s)}" for s in ("read", "mutate")
        }

    # Forged XID events: node 12's own token, posting for other nodes.
    def event(*nodes: str, start: int = 100) -> dict[str, Any]:
        body = json.loads((FIXTURES / "xid79_firing.json").read_text())
        template = body["alerts"][0]
        # As the agent's XID watcher labels it: no exporter labels (instance, job, device).
        sent = {k: v for k, v in template["labels"].items() if k in AGENT_EVENT_LABELS}
        body["commonLabels"] = {}
        body["alerts"] = [
            {
                **template,
                "labels": {**sent, "Hostname": n},
                "fingerprint": f"{i:016x}",
            }
            for i, n in enumerate(nodes, start=start)
        ]
        return body

    mine = {"authorization": f"Bearer {_token(AGENT_NODE)}"}
    for forged in (event("gpu-node-07"), event(AGENT_NODE, "gpu-node-07"), event("127.0.0.1")):
        r = httpx.post(f"{bot}/agent/events", json=forged, headers=mine)
        assert r.status_code == 403, r.text
    for headers in ({"authorization": f"Bearer {MASTER}"}, {}):
        assert (
            httpx.post(f"{bot}/agent/events", json=event(AGENT_NODE), headers=headers).status_code
            == 401
        )
    r = httpx.post(f"{bot}/agent/events", content=b"[" * 5000, headers=mine)
    assert r.status_code == 400
    r = httpx.post(f"{bot}/agent/events", json=event(AGENT_NODE, start=200), headers=mine)
    assert r.status_code == 200, r.text
    assert answers(f"{bot}/healthz")

    async def stored_nodes() -> set[str]:
        store = open_store(f"sqlite:///{tmp_path / 'gpubot.db'}")
        try:
            return {i.node or "" for i in await store.list_incidents()}
        finally:
            await store.close()

    nodes = asyncio.run(stored_nodes())
    assert AGENT_NODE in nodes  # its own event was taken
    assert "gpu-node-07" in nodes  # from the real alert above, not from a forged event
    forged_fingerprints = {f"{i:016x}" for i in range(100, 103)}
    assert not forged_fingerprints & _fingerprints(tmp_path)


def _fingerprints(tmp_path: Path) -> set[str]:
    async def read() -> set[str]:
        store = open_store(f"sqlite:///{tmp_path / 'gpubot.db'}")
        try:
            found: set[str] = set()
            for incident in await store.list_incidents():
                found |= {a.fingerprint for a in await store.alerts_for(incident.id)}
            return found
        finally:
            await store.close()

    return asyncio.run(read())


@pytest.fixture
def agent(tmp_path: Path, procs: Procs) -> str:
    """A real `gpubot agent --driver simulated` for gpu-node-12, holding only its own tokens;
    a simulated reset takes 3 s, as `nvidia-smi -r` takes seconds."""
    port = free_port()
    p = procs.spawn(
        [*AGENT, "--node", AGENT_NODE, "--listen", f"127.0.0.1:{port}"],
        log=tmp_path / "agent.log",
        cwd=tmp_path,
        env=clean_env(
            GPUBOT_AGENT_READ_TOKEN=_token(AGENT_NODE, "read"),
            GPUBOT_AGENT_MUTATE_TOKEN=_token(AGENT_NODE, "mutate"),
            GPUBOT_AGENT__SIMULATED_RESET_SECONDS="3",
        ),
    )
    url = f"http://127.0.0.1:{port}"
    wait_until(
        lambda: answers(f"{url}/healthz"),
        "the agent to answer /healthz",
        proc=p,
        output=tmp_path / "agent.log",
    )
    return url


def test_a_token_acts_only_on_its_node_and_a_read_token_never_acts(agent: str) -> None:
    power = f"{agent}/v1/gpus/6/power-limit"

    def auth(token: str) -> dict[str, str]:
        return {"authorization": f"Bearer {token}"}

    assert httpx.get(f"{agent}/v1/gpus", headers=auth(_token(AGENT_NODE))).status_code == 200
    r = httpx.post(power, json={"watts": 300}, headers=auth(_token(AGENT_NODE, "read")))
    assert r.status_code == 403
    for stolen in (_token("gpu-node-13", "mutate"), _token("gpu-node-13"), MASTER):
        assert httpx.get(f"{agent}/v1/gpus", headers=auth(stolen)).status_code == 401
        r = httpx.post(f"{agent}/v1/gpus/6/reset", json={}, headers=auth(stolen))
        assert r.status_code == 401
    gpus = httpx.get(f"{agent}/v1/gpus", headers=auth(_token(AGENT_NODE))).json()["gpus"]
    assert gpus[6]["power_limit_w"] == 700.0  # nothing above changed it
    r = httpx.post(power, json={"watts": 300}, headers=auth(_token(AGENT_NODE, "mutate")))
    assert r.status_code == 200
    assert r.json()["limit_w"] == 300.0


def test_concurrent_resets_of_one_gpu_run_one_at_a_time(agent: str) -> None:
    mutate = {"authorization": f"Bearer {_token(AGENT_NODE, 'mutate')}"}

    async def burst() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=agent, headers=mutate, timeout=60) as client:
            same = [client.post("/v1/gpus/6/reset", json={}) for _ in range(5)]
            other = client.post("/v1/gpus/7/reset", json={})
            return list(await asyncio.gather(*same, other))

    *same, other = asyncio.run(burst())
    codes = sorted(r.status_code for r in same)
    assert codes == [200, 409, 409, 409, 409], [r.text for r in same]
    for r in same:
        if r.status_code == 409:
            assert r.json() == {"error": "reset of GPU 6 already in progress", "kind": "busy"}
    assert other.status_code == 200  # another GPU is not held up
    # Once the first finished, the GPU can be reset again.
    assert (
        httpx.post(f"{agent}/v1/gpus/6/reset", json={}, headers=mutate, timeout=60).status_code
        == 200
    )


def test_a_uuid_that_is_not_the_gpus_is_refused_and_nested_json_is_400(agent: str) -> None:
    mutate = {"authorization": f"Bearer {_token(AGENT_NODE, 'mutate')}"}
    gpus = httpx.get(f"{agent}/v1/gpus", headers=mutate).json()["gpus"]
    r = httpx.post(f"{agent}/v1/gpus/6/reset", json={"uuid": gpus[7]["uuid"]}, headers=mutate)
    assert r.status_code == 409
    assert r.json()["kind"] == "uuid_mismatch"
    assert gpus[7]["uuid"] in r.json()["error"]
    for body in (b"[" * 5000, b'{"watts":' * 5000):
        r = httpx.post(f"{agent}/v1/gpus/6/power-limit", content=body, headers=mutate)
        assert r.status_code == 400
    assert answers(f"{agent}/healthz")
