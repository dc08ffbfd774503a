"""Attacks on a real `gpubot serve`'s HTTP/1.1 edge, with raw sockets on 127.0.0.1.

Request smuggling (a body framed two ways, so bytes after it would run as a second request),
a body trickled after an early refusal, and a slowloris crowd on a server held to 256 open
files, beside Alertmanager's authorised posts. Every attack loop is bounded and stops by
itself; the server is stopped by its PID.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import socket
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from reliability_procs import Procs, answers, clean_env, free_port, wait_until, write_config

from gpubot.backends.store import open_store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "alertmanager"
XID79 = (FIXTURES / "xid79_firing.json").read_bytes()
TOKEN = "webhook-token-for-tests"
LONG = 30  # header and body timeouts: only the behaviour under test may close a connection


class Served:
    def __init__(self, port: int, db: Path, log: Path) -> None:
        self.port, self.db, self.log = port, db, log
        self.url = f"http://127.0.0.1:{port}"

    def incidents(self) -> int:
        async def count() -> int:
            store = open_store(f"sqlite:///{self.db}")
            try:
                return len(await store.list_incidents())
            finally:
                await store.close()

        return asyncio.run(count())


def _nofile(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


def _serve(tmp_path: Path, procs: Procs, *, nofile: int | None = None) -> Served:
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
        web={
            "body_timeout_seconds": LONG,
            "header_timeout_seconds": LONG,
            "shutdown_grace_seconds": 3,
        },
    )
    port = free_port()
    log = tmp_path / "gpubot.log"
    p = procs.spawn(
        [sys.executable, "-m", "gpubot.cli", "serve", "--config", str(config), "--port", str(port)],
        log=log,
        cwd=tmp_path,
        env=clean_env(
            SLACK_BOT_TOKEN="xoxb-test",
            SLACK_SIGNING_SECRET="signing-secret-for-tests",
            GPUBOT_WEBHOOK_TOKEN=TOKEN,
        ),
        preexec_fn=(lambda: _nofile(nofile)) if nofile is not None else None,
    )
    wait_until(
        lambda: answers(f"http://127.0.0.1:{port}/healthz"),
        "gpubot to answer /healthz",
        proc=p,
        output=log,
    )
    return Served(port, db, log)


@pytest.fixture
def served(tmp_path: Path, procs: Procs) -> Served:
    return _serve(tmp_path, procs)


def _exchange(port: int, data: bytes, *, read_for: float = 5.0) -> tuple[bytes, float, bool]:
    """Send `data` as it is; read until the server closes or `read_for` passes.
    Returns what came back, when the reading stopped, and whether the server closed."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=read_for) as sock:
        sock.sendall(data)
        chunks = []
        closed = False
        while time.monotonic() - started < read_for:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            chunks.append(chunk)
        return b"".join(chunks), time.monotonic() - started, closed


def _alertmanager_post(body: bytes, *, framing: bytes) -> bytes:
    return (
        b"POST /alertmanager HTTP/1.1\r\nHost: gpubot\r\n"
        + f"Authorization: Bearer {TOKEN}\r\n".encode()
        + b"Content-Type: application/json\r\n"
        + framing
        + b"\r\n"
        + body
    )


# The second request, hidden after the first one's body: an authorised XID 79 post that
# would open an incident if it ran.
SMUGGLED = _alertmanager_post(XID79, framing=f"Content-Length: {len(XID79)}\r\n".encode())
CHUNKED_EMPTY = b"0\r\n\r\n"


@pytest.mark.parametrize(
    ("framing", "body"),
    [
        (b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", CHUNKED_EMPTY),
        (b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", CHUNKED_EMPTY),
        (b"Content-Length: 2\r\nContent-Length: 2\r\n", b"{}"),
        (b"Content-Length: 2, 2\r\n", b"{}"),
        (b"Content-Length: 2\r\n , 2\r\n", b"{}"),
        (b"Transfer-Encoding: gzip, chunked\r\n", CHUNKED_EMPTY),
        (b"Transfer-Encoding: chunked, gzip\r\n", CHUNKED_EMPTY),
        (b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", CHUNKED_EMPTY),
    ],
    ids=[
        "te-then-cl",
        "cl-then-te",
        "two-cl",
        "cl-list",
        "cl-folded",
        "unknown-coding",
        "chunked-not-final",
        "two-te",
    ],
)
def test_ambiguous_framing_is_400_and_the_smuggled_request_never_runs(
    served: Served, framing: bytes, body: bytes
) -> None:
    """RFC 9112 §6.1, §6.3: a body framed two ways is refused. One answer, 400, the
    connection closed at once; the authorised XID 79 post hidden after it opens nothing."""
    answer, took, closed = _exchange(
        served.port, _alertmanager_post(body, framing=framing) + SMUGGLED
    )

    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert answer.count(b"HTTP/1.1 ") == 1, answer
    assert b"connection: close" in answer.lower()
    assert closed
    assert took < 3.0
    # The server was up and answering all along; the hidden post opened no incident.
    assert httpx.get(served.url + "/healthz", timeout=5).status_code == 200
    assert served.incidents() == 0
    assert "Traceback" not in served.log.read_text()


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"POST /alertmanager HTTP/1.1\r\nAuthorization: Bearer wrong\r\n", b"401"),
        (b"POST /no-such-route HTTP/1.1\r\n", b"404"),
        (b"PUT /alertmanager HTTP/1.1\r\n", b"405"),
    ],
    ids=["401", "404", "405"],
)
def test_a_body_trickled_after_an_early_refusal_gets_the_connection_closed(
    served: Served, head: bytes, status: bytes
) -> None:
    """The refusal comes before the body (1 MB declared, 10 bytes sent); it says
    `Connection: close` and the server closes, long before any timeout (30 s here)."""
    request = head + b"Host: gpubot\r\nContent-Length: 1000000\r\n\r\n" + b"A" * 10
    answer, took, closed = _exchange(served.port, request)

    assert answer.startswith(b"HTTP/1.1 " + status), answer[:200]
    assert b"connection: close" in answer.lower()
    assert closed
    assert took < 3.0


def _hold(sockets: list[socket.socket], stop: threading.Event, rounds: int) -> None:
    """Each attacker socket sends one more byte every 0.2 s, at most `rounds` times."""
    for _ in range(rounds):
        if stop.wait(0.2):
            return
        for sock in sockets:
            with contextlib.suppress(OSError):  # shed by the server: carry on with the rest
                sock.send(b"A")


def _attacker(port: int, kind: int) -> socket.socket | None:
    heads = [
        b"POST /alertmanager HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n",
        b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n",
        b"POST /alertmanager HTTP/1.1\r\nHost: x\r\nX-Slow: ",  # headers that never end
        b"",  # a connection that says nothing
    ]
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=2)
        sock.sendall(heads[kind % len(heads)])
    except OSError:
        return None  # the server shed it, or did not accept it: the next one tries again
    return sock


def test_slowloris_crowd_cannot_starve_authorised_alertmanager_posts(
    tmp_path: Path, procs: Procs
) -> None:
    """`ulimit -n 256` on the server; 300 sockets that trickle bytes (after a 401, into a
    body the Slack route reads, into headers that never end, or say nothing), with header
    and body timeouts of 30 s. Every authorised Alertmanager post beside them is stored,
    each in under 5 s, and the server never runs out of files."""
    served = _serve(tmp_path, procs, nofile=256)
    attackers = [s for k in range(300) if (s := _attacker(served.port, k)) is not None]
    stop = threading.Event()
    holder = threading.Thread(target=_hold, args=(attackers, stop, 100), daemon=True)
    holder.start()
    payload = json.loads(XID79)
    statuses, times = [], []
    try:
        for n in range(10):
            payload["alerts"][0]["fingerprint"] = f"{n:016x}"
            started = time.monotonic()
            reply = httpx.post(
                served.url + "/alertmanager",
                json=payload,
                headers={"authorization": f"Bearer {TOKEN}"},
                timeout=5,
            )
            times.append(time.monotonic() - started)
            statuses.append(reply.status_code)
            # A second attack wave between posts: each takes the place of one shed above.
            attackers.extend(s for k in range(30) if (s := _attacker(served.port, k)) is not None)
    finally:
        stop.set()
        holder.join(timeout=10)
        for sock in attackers:
            sock.close()

    assert statuses == [200] * 10, statuses
    assert max(times) < 5.0, times
    log = served.log.read_text()
    assert "Too many open files" not in log
    assert "Traceback" not in log


def test_an_authorised_post_in_progress_outlives_a_crowd_at_the_bound(
    tmp_path: Path, procs: Procs
) -> None:
    """The oldest connection of all is Alertmanager's, its token checked and half its body
    sent; then 300 sockets arrive at a server held to 256 open files (its bound: 128).
    They shed one another, never it: the rest of its body arrives and it is stored."""
    served = _serve(tmp_path, procs, nofile=256)
    head = _alertmanager_post(b"", framing=f"Content-Length: {len(XID79)}\r\n".encode())
    half = len(XID79) // 2
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as mine:
        mine.sendall(head + XID79[:half])
        crowd = [s for k in range(300) if (s := _attacker(served.port, k)) is not None]
        try:
            # Every attacker socket was accepted and seen: a request after them answers.
            assert httpx.get(served.url + "/healthz", timeout=5).status_code == 200
            mine.sendall(XID79[half:])
            answer = b""
            while b"\r\n\r\n" not in answer:
                chunk = mine.recv(65536)
                assert chunk, "the server closed the authorised connection"
                answer += chunk
        finally:
            for sock in crowd:
                sock.close()
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert served.incidents() == 1
    log = served.log.read_text()
    assert "at most 128 open connections, not web.max_connections 512" in log  # said at start
    assert "shedding" in log  # and reached
