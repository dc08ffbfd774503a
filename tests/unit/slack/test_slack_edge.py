"""/slack/events before bolt: signature and timestamp on raw bytes, then once only, then parse."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.web.async_client import AsyncWebClient
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gpubot.backends.store import SqlStore, open_store
from gpubot.config import Settings, load_settings
from gpubot.slack.app import SlackParts
from gpubot.slack.verify import (
    WINDOW_SECONDS,
    MemorySeenRequests,
    Refused,
    SeenRequests,
    SlackVerifier,
)
from gpubot.wiring import build_app

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
NOW = 1_764_000_000  # 2025-11-24, any fixed instant: the clock is injected


def sign(body: bytes, *, ts: int | str = NOW, secret: str = SECRET) -> dict[str, str]:
    base = b"v0:" + str(ts).encode() + b":" + body
    digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": str(ts), "X-Slack-Signature": f"v0={digest}"}


def slash(text: str = "help", trigger: str = "1.2.3") -> bytes:
    return urlencode(
        {
            "team_id": "T0001",
            "api_app_id": "A0001",
            "command": "/gpu",
            "text": text,
            "user_id": "U1",
            "trigger_id": trigger,
        }
    ).encode()


@dataclass
class Edge:
    """One replica's /slack/events, with bolt replaced by a recorder of what reached it."""

    client: httpx.AsyncClient
    parts: SlackParts
    reached: list[bytes] = field(default_factory=list)

    async def post(self, body: bytes, headers: dict[str, Any]) -> httpx.Response:
        return await self.client.post(
            "/slack/events",
            content=body,
            headers={"content-type": "application/x-www-form-urlencoded", **headers},
        )


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Settings:
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-unit")
    return load_settings(
        None,
        store={"url": f"sqlite:///{tmp_path}/edge.db"},
        slack={"mode": "http", "team_id": "T0001", "app_id": "A0001"},
    )


@pytest.fixture
def clock() -> list[float]:
    return [float(NOW)]


def _edge(settings: Settings, seen: SeenRequests, clock: list[float]) -> Edge:
    bolt = AsyncApp(client=AsyncWebClient(token="xoxb-unit"), request_verification_enabled=False)
    parts = SlackParts(
        app=bolt,
        notifier=None,
        settings=settings,
        seen=seen,
        now=lambda: clock[0],  # type: ignore[arg-type]
    )
    reached: list[bytes] = []

    async def bolt_stand_in(request: Request) -> Response:
        reached.append(await request.body())
        return Response(status_code=200)

    parts._http.handle = bolt_stand_in  # type: ignore[method-assign]
    web = Starlette(routes=[Route("/slack/events", parts.handle_http, methods=["POST"])])
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=web), base_url="http://test")
    return Edge(client=client, parts=parts, reached=reached)


@pytest.fixture
async def edge(settings: Settings, clock: list[float]) -> AsyncIterator[Edge]:
    e = _edge(settings, MemorySeenRequests(), clock)
    yield e
    await e.client.aclose()


@pytest.fixture
def no_bolt_parse(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Any construction of a bolt request (bolt's parse, or edge.unreadable_body's) is
    recorded and fails loudly."""
    parsed: list[str] = []

    def refuse(self: Any, *args: Any, **kwargs: Any) -> None:
        parsed.append("parsed")
        raise AssertionError("the body was parsed")

    monkeypatch.setattr(AsyncBoltRequest, "__init__", refuse)
    return parsed


def _one_line_401(reply: httpx.Response) -> str:
    assert reply.status_code == 401
    error = reply.json()["error"]
    assert isinstance(error, str)
    assert error.startswith("invalid request: ")
    assert "\n" not in error
    return error


async def test_unsigned_garbage_is_refused_before_any_parse(
    edge: Edge, no_bolt_parse: list[str]
) -> None:
    """Four MiB that bolt would choke on (not UTF-8, not a form, not JSON), unsigned, and
    signed with the wrong secret: 401, and nothing constructed a bolt request."""
    garbage = b"payload=%7B" + b"\xff\xfe[" * ((4 << 20) // 3)
    for headers in ({}, sign(garbage, secret="not-the-secret"), sign(b"other")):
        _one_line_401(await edge.post(garbage, headers))
    assert no_bolt_parse == []
    assert edge.reached == []


@pytest.mark.parametrize(
    "stamp",
    [
        "",
        "abc",
        "²³⁴",  # Unicode digits: int() would read them
        "١٧٦٤٠٠٠٠٠٠",
        " 1764000000",
        "+1764000000",
        "1_764_000_000",
        "1764000000.5",
        "-1",
        "1e9",
        "9" * 40,  # absurd
    ],
)
async def test_malformed_timestamp_is_401_not_500(
    edge: Edge, no_bolt_parse: list[str], stamp: str
) -> None:
    body = slash()
    # Signed over exactly these bytes, so only the timestamp's shape is wrong.
    base = b"v0:" + stamp.encode() + b":" + body
    digest = hmac.new(SECRET.encode(), base, hashlib.sha256).hexdigest()
    headers = {"X-Slack-Request-Timestamp": stamp.encode(), "X-Slack-Signature": f"v0={digest}"}
    assert "timestamp" in _one_line_401(await edge.post(body, headers)).lower()
    assert no_bolt_parse == []


async def test_missing_timestamp_or_garbled_signature_is_401(edge: Edge) -> None:
    body = slash()
    good = sign(body)
    _one_line_401(await edge.post(body, {"X-Slack-Signature": good["X-Slack-Signature"]}))
    _one_line_401(await edge.post(body, {**good, "X-Slack-Signature": "v0=zz"}))
    _one_line_401(await edge.post(body, {**good, "X-Slack-Signature": "v1=" + "0" * 64}))
    assert edge.reached == []


async def test_the_window_is_five_minutes_on_the_injected_clock(
    edge: Edge, clock: list[float]
) -> None:
    for offset in (-WINDOW_SECONDS - 1, WINDOW_SECONDS + 1):
        body = slash(trigger=f"t{offset}")
        error = _one_line_401(await edge.post(body, sign(body, ts=NOW + offset)))
        assert "5-minute window" in error
    for offset in (-WINDOW_SECONDS, WINDOW_SECONDS):
        body = slash(trigger=f"ok{offset}")
        assert (await edge.post(body, sign(body, ts=NOW + offset))).status_code == 200
    assert len(edge.reached) == 2
    # The same request, signed at NOW, is stale once the clock moves on 301 s.
    body = slash(trigger="late")
    clock[0] = NOW + WINDOW_SECONDS + 1
    _one_line_401(await edge.post(body, sign(body)))


async def test_a_signed_request_is_accepted_once(edge: Edge) -> None:
    """The replay (and Slack's retry of the same request) gets an empty 200 and reaches
    nothing; a different request signed in the same second is accepted."""
    body = slash("run xid79 node=gpu-node-02")
    headers = sign(body)
    first = await edge.post(body, headers)
    assert first.status_code == 200
    again = await edge.post(body, headers)
    retry = await edge.post(body, {**headers, "X-Slack-Retry-Num": "1"})
    assert (again.status_code, again.content) == (200, b"")
    assert (retry.status_code, retry.content) == (200, b"")
    other = slash("run xid79 node=gpu-node-02", trigger="1.2.4")
    assert (await edge.post(other, sign(other))).status_code == 200
    assert edge.reached == [body, other]


async def test_unreadable_bodies_are_400_only_once_signed(edge: Edge) -> None:
    body = b"payload=%7B"
    _one_line_401(await edge.post(body, {}))
    reply = await edge.post(body, sign(body))
    assert reply.status_code == 400
    assert "not readable JSON" in reply.json()["error"]
    assert edge.reached == []


async def test_replay_is_refused_by_another_replica_on_the_same_store(
    settings: Settings, clock: list[float], tmp_path: Path
) -> None:
    """Two app instances (two replicas) on one database: what one accepted, the other
    refuses, within the window."""
    stores = [open_store(f"sqlite:///{tmp_path}/shared.db") for _ in range(2)]
    edges = [_edge(settings, store, clock) for store in stores]
    try:
        body = slash("run xid79 node=gpu-node-02")
        headers = sign(body)
        assert (await edges[0].post(body, headers)).status_code == 200
        replayed = await edges[1].post(body, {**headers, "X-Slack-Retry-Num": "1"})
        assert (replayed.status_code, replayed.content) == (200, b"")
        assert [len(e.reached) for e in edges] == [1, 0]
    finally:
        for e in edges:
            await e.client.aclose()
        for store in stores:
            await store.close()


async def test_store_down_is_503_and_runs_nothing(settings: Settings, clock: list[float]) -> None:
    class Down:
        async def first_sight(self, digest: str, *, expires_at: datetime, now: datetime) -> bool:
            raise ConnectionError("database unreachable")

    e = _edge(settings, Down(), clock)
    body = slash()
    reply = await e.post(body, sign(body))
    await e.client.aclose()
    assert reply.status_code == 503
    assert e.reached == []


async def test_sql_seen_prunes_expired_digests(tmp_path: Path) -> None:
    store: SqlStore = open_store(f"sqlite:///{tmp_path}/seen.db")
    t0 = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
    try:
        until = t0 + timedelta(minutes=6)
        assert await store.first_sight("a" * 64, expires_at=until, now=t0)
        assert not await store.first_sight("a" * 64, expires_at=until, now=t0)
        later = t0 + timedelta(minutes=7)
        assert await store.first_sight("b" * 64, expires_at=later + timedelta(minutes=6), now=later)
        with store._engine.connect() as conn:
            left = conn.exec_driver_sql("SELECT digest FROM gpubot_slack_seen").scalars().all()
        assert left == ["b" * 64]
    finally:
        await store.close()


def test_verifier_refuses_an_empty_secret_and_reports_one_line() -> None:
    with pytest.raises(ValueError, match="empty"):
        SlackVerifier("")
    verifier = SlackVerifier(SECRET, now=lambda: float(NOW))
    body = slash()
    signed = verifier.check(body, {k.lower(): v for k, v in sign(body).items()})
    assert len(signed.digest) == 64
    assert signed.expires_at > signed.now
    with pytest.raises(Refused, match="signature does not match"):
        verifier.check(body + b"x", {k.lower(): v for k, v in sign(body).items()})


async def test_bolt_does_not_verify_again(settings: Settings) -> None:
    """The edge verified; bolt's own check (after its parse, on the real clock) is off."""
    app = build_app(settings)
    try:
        assert app.slack is not None
        names = [type(m).__name__ for m in app.slack.app._async_middleware_list]
        assert "AsyncRequestVerification" not in names
        assert isinstance(app.slack.seen, SqlStore)  # the replay record is the shared store
    finally:
        await app.aclose()
