"""Slack in the log and in /metrics, against the Slack stand-in: a signature refusal is logged
with its reason (never the secret), failed Web API calls are counted by kind, and the outbox
backlog shows while messages wait their turn."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from slack_harness import FIXTURES, SECRET, SlackHarness, sign, slack_harness

from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.web.app import create_app

XID79 = (FIXTURES / "xid79_firing.json").read_bytes()
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def web_client(h: SlackHarness) -> httpx.AsyncClient:
    """The harness's app with the bot's own metrics (the store, the outbox, the engine)."""
    web = create_app(h.app.service, slack_events=h.slack.handle_http, metrics=h.app.metrics)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=web), base_url="http://test")


async def scrape(client: httpx.AsyncClient) -> Samples:
    reply = await client.get("/metrics")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(reply.text)
        for s in family.samples
    }


async def post_alert(client: httpx.AsyncClient) -> None:
    reply = await client.post(
        "/alertmanager", content=XID79, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 200


async def test_a_bad_slack_signature_is_logged_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A request signed with another secret: 401, one WARNING naming /slack/events and why,
    counted by route; the signing secret appears nowhere in the log."""
    async with slack_harness(tmp_path, monkeypatch) as h, web_client(h) as client:
        body = h.slash_body("status")
        with caplog.at_level(logging.WARNING, logger="gpubot.web.refusals"):
            reply = await client.post(
                "/slack/events",
                content=body,
                headers={
                    "content-type": "application/x-www-form-urlencoded",
                    **sign(body, secret="another-secret-entirely"),
                },
            )
        m = await scrape(client)

    assert reply.status_code == 401
    (line,) = [r for r in caplog.records if getattr(r, "event", None) == "http.refused"]
    assert line.path == "/slack/events"  # type: ignore[attr-defined]
    assert line.status == 401  # type: ignore[attr-defined]
    assert line.reason.startswith("invalid request: ")  # type: ignore[attr-defined]
    assert SECRET not in caplog.text
    assert m[("gpubot_http_refusals_total", (("code", "401"), ("route", "/slack/events")))] == 1


async def test_slack_api_errors_are_counted_by_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two 500s and a 429 on chat.postMessage: retried, every message delivered, and counted
    as server_error 2 and rate_limited 1; nothing counted as a client error."""
    async with slack_harness(tmp_path, monkeypatch) as h, web_client(h) as client:
        h.standin.fail("chat.postMessage", status=500, retry_after=None, times=2)
        h.standin.fail("chat.postMessage", status=429, retry_after=0, times=1)
        inject_xid(h.sim, node="gpu-node-07", gpu=3)
        await post_alert(client)
        await h.settle()
        m = await scrape(client)

    assert m[("gpubot_slack_api_errors_total", (("kind", "server_error"),))] == 2
    assert m[("gpubot_slack_api_errors_total", (("kind", "rate_limited"),))] == 1
    assert m[("gpubot_slack_api_errors_total", (("kind", "client_error"),))] == 0
    assert m[("gpubot_slack_outbox_messages", ())] == 0
    assert m[("gpubot_approvals_pending", ())] == 1


async def test_the_outbox_backlog_shows_while_messages_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At half a message a second, an incident's thread queues: the gauge is the outbox's own
    count of messages queued or in flight, and more than one."""
    async with slack_harness(tmp_path, monkeypatch, rate=0.5) as h, web_client(h) as client:
        inject_xid(h.sim, node="gpu-node-07", gpu=3)
        await post_alert(client)
        await h.app.service.wait_idle()
        pending = h.slack.notifier.outbox.pending
        m = await scrape(client)
        h.slack.notifier.outbox.interval = 0.0  # let the rest go at once before closing

    assert pending > 1
    assert m[("gpubot_slack_outbox_messages", ())] == pending
