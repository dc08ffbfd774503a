"""hypothesis over alert labels and annotations, end to end: webhook → runbook → agent → Slack.

The bot runs in Slack HTTP mode against the Slack stand-in, on the simulated cluster with
its GPUs behind an HTTP node agent (a recording stand-in on 127.0.0.1), as a real cluster's
are. Labels and annotations are drawn from Unicode, control characters, Slack mrkdwn,
Jinja, and path and URL fragments, some naming a decoy server. For every payload:

- no 5xx and no unhandled error;
- no outbound connection goes anywhere but the Slack stand-in and the cluster-reported agent
  address, and the decoy receives nothing;
- nothing Slack receives carries live markup other than gpubot's own (config mentions, and
  links with gpubot's labels);
- nothing is lost: every alert is stored, or rejected and recorded with its fingerprint.
"""

from __future__ import annotations

import asyncio
import copy
import http.server
import itertools
import json
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st
from reliability_fuzz import LONG, SHORT, error_log, fuzz
from slack_harness import FIXTURES, SlackHarness, slack_harness

BUDGETS = [
    pytest.param(SHORT, id="short"),
    pytest.param(LONG, id="long", marks=pytest.mark.fuzz_long),
]
XID79: dict[str, Any] = json.loads((FIXTURES / "xid79_firing.json").read_bytes())
_FINGERPRINTS = itertools.count(0x1000)


class Recorder(http.server.ThreadingHTTPServer):
    """An HTTP server on 127.0.0.1 that keeps every request line and answers one JSON."""

    def __init__(self, answer: tuple[int, dict[str, Any]]) -> None:
        self.requests: list[str] = []
        status, body = answer
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                recorder.requests.append(f"{self.command} {self.path}")
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                return None

        super().__init__(("127.0.0.1", 0), Handler)
        self.port = int(self.server_address[1])
        threading.Thread(target=self.serve_forever, daemon=True).start()


@pytest.fixture
def decoy() -> Iterator[Recorder]:
    server = Recorder((200, {"gpus": []}))
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def agent() -> Iterator[Recorder]:
    """Every node's agent, as the cluster reports them all at 127.0.0.1: it knows no GPU."""
    server = Recorder((404, {"error": "this stand-in has no GPUs", "kind": "not_found"}))
    yield server
    server.shutdown()
    server.server_close()


class Connections:
    """Every TCP connection the process opens, by (host, port)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[str, int]] = []
        loop_connect = asyncio.BaseEventLoop.create_connection
        sock_connect = socket.create_connection
        connections = self

        async def create_connection(self: Any, *args: Any, **kwargs: Any) -> Any:
            host = kwargs.get("host", args[1] if len(args) > 1 else None)
            port = kwargs.get("port", args[2] if len(args) > 2 else None)
            if host is not None:
                connections.seen.append((str(host), int(port or 0)))
            return await loop_connect(self, *args, **kwargs)

        def create_socket_connection(address: tuple[str, int], *args: Any, **kwargs: Any) -> Any:
            connections.seen.append((str(address[0]), int(address[1])))
            return sock_connect(address, *args, **kwargs)

        monkeypatch.setattr(asyncio.BaseEventLoop, "create_connection", create_connection)
        monkeypatch.setattr(socket, "create_connection", create_socket_connection)


@dataclass
class Arena:
    runner: asyncio.Runner
    h: SlackHarness


@pytest.fixture
def arena(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: Recorder) -> Iterator[Arena]:
    monkeypatch.setenv("GPUBOT_AGENT_TOKEN", "master-secret-for-fuzzing")
    clusters = [{"name": "sim", "backend": "simulated", "agent": {"port": agent.port}}]
    with asyncio.Runner() as runner:
        context = slack_harness(tmp_path, monkeypatch, clusters=clusters)
        h = runner.run(context.__aenter__())
        try:
            yield Arena(runner, h)
        finally:
            runner.run(context.__aexit__(None, None, None))


def _fragments(decoy_port: int) -> st.SearchStrategy[str]:
    decoy = f"127.0.0.1:{decoy_port}"
    nasty = [
        "<!channel>",
        "<!here>",
        "<!everyone>",
        "<@U1>",
        "<@U999EVIL>",
        "<#C123|general>",
        "<!subteam^S0EVIL>",
        f"<http://{decoy}/x|click me>",
        f"http://{decoy}/v1/gpus",
        decoy,
        f"{decoy}/v1/gpus/0/reset#",
        "../../v1/gpus/0/reset",
        "gpu-node-03/../gpu-node-04",
        "{{ 7 * 7 }}",
        "{{ alert.labels }}",
        "{% for x in range(9) %}x{% endfor %}",
        "${jndi:ldap://x}",
        "&lt;!channel&gt;",
        "*bold* _it_ ~s~ `code` ```block```",
        "\u00b2",
        "\u0667\u0669",
        "\u202etxet",
        "\x00",
        "\r\n",
        "gpu-node-07\n",
        "gpu-node-07",
        "79",
        "GPU-5f3c1a2b-0000-1111-2222-333344445553",
    ]
    return st.one_of(st.sampled_from(nasty), st.text(max_size=20)).map(str)


def _hostile_text(decoy_port: int) -> st.SearchStrategy[str]:
    return st.lists(_fragments(decoy_port), min_size=1, max_size=4).map("".join)


LABELS = ["Hostname", "node", "UUID", "gpu", "xid", "namespace", "pod", "cluster", "severity"]


@st.composite
def payloads(draw: st.DrawFn, decoy_port: int) -> dict[str, Any]:
    """The XID 79 capture with up to three alerts whose labels and annotations are hostile."""
    doc = copy.deepcopy(XID79)
    template = doc["alerts"][0]
    alerts = []
    for _ in range(draw(st.integers(1, 3))):
        alert = copy.deepcopy(template)
        text = _hostile_text(decoy_port)
        alert["labels"].update(draw(st.dictionaries(st.sampled_from(LABELS), text, max_size=3)))
        alert["annotations"].update(
            draw(st.dictionaries(st.sampled_from(["summary", "description"]), text, max_size=2))
        )
        if draw(st.booleans()):
            alert["generatorURL"] = draw(text)
        alert["fingerprint"] = f"{next(_FINGERPRINTS):016x}"
        alerts.append(alert)
    doc["alerts"] = alerts
    return doc


# gpubot's own live markup: mentions from its config, and links with a label it chose.
_OWN_MARKUP = re.compile(
    r"<@U1>|<@U2>|<!subteam\^S0ONCALL>|<https?://[^\s<>|]+\|[A-Za-z0-9 .,:()/_-]{1,60}>"
)


def _live_markup(standin_text: str) -> list[str]:
    """Markup Slack would act on that gpubot did not write itself."""
    rest = _OWN_MARKUP.sub("", standin_text)
    return re.findall(r"<[^>]{0,40}", rest)


@pytest.mark.parametrize("profile", BUDGETS)
def test_hostile_alert_text_stays_data_end_to_end(
    arena: Arena,
    decoy: Recorder,
    agent: Recorder,
    monkeypatch: pytest.MonkeyPatch,
    profile: str,
) -> None:
    h, run = arena.h, arena.runner.run
    connections = Connections(monkeypatch)
    slack_port = int(h.standin.url.rsplit(":", 1)[1])
    allowed = {("127.0.0.1", slack_port), ("127.0.0.1", agent.port)}

    with error_log() as errors:

        def check(doc: dict[str, Any]) -> None:
            status, text = run(_post(h, doc))
            assert status == 200, text
            assert errors.take() == []
            assert set(connections.seen) <= allowed, connections.seen
            assert decoy.requests == []
            for message in h.standin.messages.values():
                assert _live_markup(h.standin.text_of(message)) == [], message
            assert run(_lost(h, doc)) == []

        fuzz(profile, payloads(decoy.port), check)
    # The flows really ran: XID 79 alerts reached the agent and Slack.
    assert agent.requests
    assert h.standin.messages


async def _post(h: SlackHarness, doc: dict[str, Any]) -> tuple[int, str]:
    reply = await h.client.post(
        "/alertmanager",
        content=json.dumps(doc).encode(),
        headers={"content-type": "application/json"},
    )
    await h.settle()
    return reply.status_code, reply.text[:300]


async def _lost(h: SlackHarness, doc: dict[str, Any]) -> list[str]:
    """Fingerprints of this payload's alerts that are neither stored nor recorded rejected."""
    stored = set()
    for incident in await h.app.store.list_incidents(limit=10_000):
        stored |= {a.fingerprint for a in await h.app.store.alerts_for(incident.id)}
    rejected = {
        str(e.args.get("fingerprint"))
        for e in await h.app.store.events()
        if e.kind == "alert.rejected"
    }
    return [
        a["fingerprint"]
        for a in doc["alerts"]
        if a["fingerprint"] not in stored and a["fingerprint"] not in rejected
    ]
