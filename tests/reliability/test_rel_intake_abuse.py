"""Attacks on a real `gpubot serve` before anyone is authenticated, and hostile alert labels.

The server runs as operators run it (Slack in HTTP mode, SQLite), on 127.0.0.1. Each test
is an attack seen against the real process: a huge unsigned POST, a client that trickles
its headers or its body, and one bad label beside a real XID 79.
"""

from __future__ import annotations

import asyncio
import copy
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from reliability_procs import Procs, free_port, serve, wait_until, write_config

from gpubot.backends.store import open_store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "alertmanager"
XID79: dict[str, Any] = json.loads((FIXTURES / "xid79_firing.json").read_bytes())
HUGE = 120 * 1024 * 1024


class Served:
    def __init__(self, url: str, port: int, db: Path) -> None:
        self.url, self.port, self.db = url, port, db


@pytest.fixture
def served(tmp_path: Path, procs: Procs) -> Served:
    db = tmp_path / "gpubot.db"
    config = write_config(
        tmp_path / "gpubot.yaml",
        slack={
            "mode": "http",
            "team_id": "T0001",
            "app_id": "A0001",
            "channel": "C0INCIDENT",
            "api_url": "http://127.0.0.1:9/api/",
        },
        store={"url": f"sqlite:///{db}"},
        # Slack on a closed port: the short grace bounds the unsent messages' wait at exit.
        web={"body_timeout_seconds": 1, "header_timeout_seconds": 1, "shutdown_grace_seconds": 3},
    )
    port = free_port()
    serve(
        procs,
        config,
        port=port,
        SLACK_BOT_TOKEN="xoxb-test",
        SLACK_SIGNING_SECRET="signing-secret-for-tests",
    )
    return Served(f"http://127.0.0.1:{port}", port, db)


class HealthzProbe:
    """Times GET /healthz over and over in a thread, beside an attack."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.times: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=5) as client:
            while not self._stop.is_set():
                started = time.perf_counter()
                assert client.get(self.url + "/healthz").status_code == 200
                self.times.append(time.perf_counter() - started)
                time.sleep(0.01)

    def __enter__(self) -> HealthzProbe:
        self._thread.start()
        wait_until(lambda: len(self.times) >= 5, "the first /healthz answers")
        return self

    def __exit__(self, *exc: object) -> None:
        seen = len(self.times)
        wait_until(lambda: len(self.times) >= seen + 5, "/healthz answers after the attack")
        self._stop.set()
        self._thread.join(timeout=10)


def _raw_request(port: int, head: bytes, body: bytes = b"", *, read_for: float = 5.0) -> bytes:
    """Send bytes as they are, then read the answer until the server closes or time is up."""
    with socket.create_connection(("127.0.0.1", port), timeout=read_for) as sock:
        sock.sendall(head + body)
        chunks = []
        deadline = time.monotonic() + read_for
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


def test_a_120mb_unsigned_post_is_413_within_a_second_while_healthz_stays_fast(
    served: Served,
) -> None:
    head = (
        b"POST /slack/events HTTP/1.1\r\nHost: gpubot\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n"
        + f"Content-Length: {HUGE}\r\n\r\n".encode()
    )
    with HealthzProbe(served.url) as probe:
        started = time.perf_counter()
        answer = _raw_request(served.port, head, b"payload=" + b"A" * (1024 * 1024))
        elapsed = time.perf_counter() - started

    assert answer.startswith(b"HTTP/1.1 413")
    assert elapsed < 1.0
    # /healthz kept answering beside the attack; the bound leaves room for a loaded machine.
    assert max(probe.times) < 0.5, probe.times


def test_a_chunked_unsigned_flood_is_cut_at_the_cap(served: Served) -> None:
    """No Content-Length: the server stops reading at the cap (1 MiB), answers 413 and
    closes, instead of reading 120 MB first."""

    def flood() -> Iterator[bytes]:
        for _ in range(HUGE // (64 * 1024)):
            yield b"A" * (64 * 1024)

    started = time.perf_counter()
    try:
        with httpx.Client(timeout=10) as client:
            reply = client.post(served.url + "/slack/events", content=flood())
        status: int | None = reply.status_code
    except httpx.TransportError:  # the server closed while the client was still writing
        status = None
    elapsed = time.perf_counter() - started

    assert status in (413, None)
    assert elapsed < 5.0
    assert httpx.get(served.url + "/healthz", timeout=1).status_code == 200


def test_headers_that_never_finish_are_closed_after_the_header_timeout(served: Served) -> None:
    started = time.perf_counter()
    answer = _raw_request(served.port, b"POST /alertmanager HTTP/1.1\r\nHost: gp", read_for=8.0)
    held = time.perf_counter() - started

    # The server closed the connection (header timeout 1 s), long before the client gave up.
    assert answer == b""
    assert held < 4.0


def test_a_body_that_stops_arriving_is_408(served: Served) -> None:
    head = (
        b"POST /alertmanager HTTP/1.1\r\nHost: gpubot\r\nContent-Type: application/json\r\n"
        b"Content-Length: 5000\r\n\r\n"
    )
    started = time.perf_counter()
    answer = _raw_request(served.port, head, b'{"version": "4"', read_for=8.0)

    assert answer.startswith(b"HTTP/1.1 408")
    assert time.perf_counter() - started < 5.0


def test_a_unicode_digit_alert_does_not_cost_the_real_xid79(served: Served) -> None:
    payload = copy.deepcopy(XID79)
    bad = copy.deepcopy(payload["alerts"][0])
    bad["labels"] |= {"xid": "\u00b2", "Hostname": "gpu-node-02"}
    bad["fingerprint"] = "00000000000000b2"
    payload["alerts"].insert(0, bad)

    replies = [httpx.post(served.url + "/alertmanager", json=payload) for _ in range(2)]

    assert [r.status_code for r in replies] == [200, 200]
    assert replies[0].json()["opened"] == 1
    assert replies[0].json()["rejected"] == 1

    async def stored() -> tuple[list[str | None], list[str]]:
        store = open_store(f"sqlite:///{served.db}")
        try:
            nodes = [i.node for i in await store.list_incidents()]
            kinds = [e.kind for e in await store.events()]
            return nodes, kinds
        finally:
            await store.close()

    wait_until(lambda: asyncio.run(stored())[0] == ["gpu-node-07"], "the XID 79 incident")
    nodes, kinds = asyncio.run(stored())
    assert nodes == ["gpu-node-07"]
    assert kinds.count("alert.rejected") == 2  # once per delivery, each with its reason


def test_alert_text_cannot_forge_or_restyle_a_line_of_console_output(
    tmp_path: Path, procs: Procs
) -> None:
    """Slack off: incident threads are printed to stdout. An alert whose summary holds a
    newline, a carriage return, ANSI and C1 sequences is printed on the bot's own lines, its
    control characters shown as escapes: no forged line, no escape sequence."""
    config = write_config(tmp_path / "gpubot.yaml", store={"url": f"sqlite:///{tmp_path}/c.db"})
    port = free_port()
    serve(procs, config, port=port)
    forged = "2026-11-28T04:00:00Z INFO gpubot: incident resolved, all clear"
    payload = copy.deepcopy(XID79)
    for alert in payload["alerts"]:
        alert["annotations"]["summary"] = f"GPU fell off\n{forged}\r\x1b[2K\x1b[1A\x9b31m"
        alert["annotations"]["description"] = f"{forged}\x1b]0;owned\x07"
    reply = httpx.post(f"http://127.0.0.1:{port}/alertmanager", json=payload, timeout=10)
    assert reply.status_code == 200

    log = tmp_path / "gpubot.log"
    wait_until(lambda: "┏━" in log.read_text(), "the incident thread on stdout")
    printed = log.read_bytes().decode()
    assert not any(c in printed for c in "\x1b\x9b\x07\r")
    assert not any(line.startswith(forged) for line in printed.splitlines())
    assert "GPU fell off\\n2026-11-28T04:00:00Z" in printed
