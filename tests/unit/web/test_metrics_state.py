"""/metrics after a scenario: the store's state gauges, the engine's counters, the leader and
the outbox gauges, and every 4xx logged with its reason."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpubot.backends.recording_chat import RecordingNotifier
from gpubot.backends.simulated import simulated_state
from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.config import load_settings
from gpubot.engine.clock import FakeClock
from gpubot.errors import InputError
from gpubot.web.app import create_app
from gpubot.web.metrics import StateCollector, Watched
from gpubot.wiring import App, build_app

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "alertmanager"
XID79 = (FIXTURES / "xid79_firing.json").read_bytes()
NODE, GPU = "gpu-node-07", 3
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


class Bot:
    def __init__(self, app: App, client: httpx.AsyncClient, clock: FakeClock) -> None:
        self.app, self.client, self.clock = app, client, clock

    async def post(self, body: bytes, **headers: str) -> httpx.Response:
        reply = await self.client.post(
            "/alertmanager", content=body, headers={"content-type": "application/json", **headers}
        )
        await self.app.service.wait_idle()
        return reply

    async def metrics(self) -> Samples:
        reply = await self.client.get("/metrics")
        assert reply.status_code == 200
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(reply.text)
            for s in family.samples
        }


MakeBot = Callable[..., Awaitable[Bot]]


@pytest.fixture
async def make_bot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[MakeBot]:
    for name in ("GPUBOT_WEBHOOK_TOKEN", "SLACK_BOT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    async with contextlib.AsyncExitStack() as stack:

        async def make(
            *, webhook_token: str | None = None, max_body_bytes: int = 1 << 20, **policy: Any
        ) -> Bot:
            settings = load_settings(
                None,
                store={"url": f"sqlite:///{tmp_path}/bot.db"},
                slack={"mode": "off"},
                policy={"groups": {"oncall": {"users": ["U1"]}}, **policy},
            )
            clock = FakeClock()
            app = build_app(settings, notifier=RecordingNotifier(), clock=clock)
            stack.push_async_callback(app.aclose)
            web = create_app(
                app.service,
                metrics=app.metrics,
                webhook_token=webhook_token,
                max_body_bytes=max_body_bytes,
            )
            client = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=web), base_url="http://test"
            )
            stack.push_async_callback(client.aclose)
            return Bot(app, client, clock)

        yield make


def xid_for(node: str) -> bytes:
    """The XID 79 fixture for another node (its fingerprint too, so it is a new incident)."""
    payload = json.loads(XID79)
    for alert in payload["alerts"]:
        alert["labels"]["Hostname"] = node
        alert["fingerprint"] = f"{alert['fingerprint'][:8]}{node[-2:]}"
    payload["groupKey"] = f"{payload['groupKey']}-{node}"
    return json.dumps(payload).encode()


async def test_an_xid_incident_waiting_for_approval_shows_in_the_gauges(make_bot: MakeBot) -> None:
    """One XID 79 incident whose drain waits for a human: incidents open 1, approvals pending
    1 (its age follows the clock), one run waiting_approval, the steps that ran counted by
    action and result, this replica the leader, no Slack backlog."""
    bot = await make_bot()
    inject_xid(simulated_state(bot.app.clusters["sim"]), node=NODE, gpu=GPU)
    assert (await bot.post(XID79)).status_code == 200
    bot.clock.advance(timedelta(minutes=7))

    m = await bot.metrics()

    assert m[("gpubot_incidents_open", ())] == 1
    assert m[("gpubot_approvals_pending", ())] == 1
    assert m[("gpubot_approval_oldest_pending_age_seconds", ())] == 7 * 60
    assert m[("gpubot_runs", (("state", "waiting_approval"),))] == 1
    assert m[("gpubot_runs", (("state", "running"),))] == 0
    assert m[("gpubot_runs", (("state", "held"),))] == 0
    assert m[("gpubot_steps_held", ())] == 0
    assert m[("gpubot_step_outcomes_total", (("action", "node.cordon"), ("result", "succeeded")))]
    assert m[("gpubot_step_outcomes_total", (("action", "node.taint"), ("result", "succeeded")))]
    assert m[("gpubot_runs_finished_total", (("runbook", "xid79"), ("status", "succeeded")))] == 0
    assert m[("gpubot_leader", ())] == 1
    assert m[("gpubot_store_up", ())] == 1
    assert m[("gpubot_slack_outbox_messages", ())] == 0
    assert m[("gpubot_slack_api_errors_total", (("kind", "server_error"),))] == 0


async def test_steps_the_blast_radius_cap_holds_are_counted(make_bot: MakeBot) -> None:
    """With room for one cordon, a second XID node's cordon is held: steps held 1, one run
    held, and the hold counted as an outcome of node.cordon."""
    bot = await make_bot(blast_radius={"max_cordoned_count": 1})
    for node in (NODE, "gpu-node-08"):
        inject_xid(simulated_state(bot.app.clusters["sim"]), node=node, gpu=GPU)
        assert (await bot.post(xid_for(node))).status_code == 200

    m = await bot.metrics()

    assert m[("gpubot_incidents_open", ())] == 2
    assert m[("gpubot_steps_held", ())] == 1
    assert m[("gpubot_runs", (("state", "held"),))] == 1
    assert m[("gpubot_runs", (("state", "waiting_approval"),))] == 1
    assert m[("gpubot_step_outcomes_total", (("action", "node.cordon"), ("result", "held")))] == 1


async def test_a_denied_approval_ends_the_run_and_is_counted(make_bot: MakeBot) -> None:
    """A deny: the step's outcome `denied`, the run counted as cancelled, nothing pending."""
    bot = await make_bot()
    inject_xid(simulated_state(bot.app.clusters["sim"]), node=NODE, gpu=GPU)
    await bot.post(XID79)
    (run,) = await bot.app.store.list_runs()
    (request,) = await bot.app.store.approvals_for(run.id)

    await bot.app.service.vote(approval_id=request.id, user="U1", decision="deny")
    await bot.app.service.wait_idle()
    m = await bot.metrics()

    assert m[("gpubot_step_outcomes_total", (("action", "node.drain"), ("result", "denied")))] == 1
    assert m[("gpubot_runs_finished_total", (("runbook", "xid79"), ("status", "cancelled")))] == 1
    assert m[("gpubot_approvals_pending", ())] == 0
    assert m[("gpubot_approval_oldest_pending_age_seconds", ())] == 0
    assert m[("gpubot_runs", (("state", "waiting_approval"),))] == 0


async def test_the_attempt_cap_refusal_is_counted_by_runbook(make_bot: MakeBot) -> None:
    """With one attempt allowed per node, `/gpu run xid79` on the node the alert's run already
    acts on is refused: the refusal is counted under the runbook's name."""
    bot = await make_bot(attempts={"max_attempts": 1})
    inject_xid(simulated_state(bot.app.clusters["sim"]), node=NODE, gpu=GPU)
    await bot.post(XID79)

    with pytest.raises(InputError, match="attempt cap"):
        await bot.app.service.start_command_run(
            runbook="xid79", args={"node": NODE}, requested_by="U1", cluster="sim"
        )
    m = await bot.metrics()

    assert m[("gpubot_attempt_cap_refusals_total", (("runbook", "xid79"),))] == 1


async def test_each_4xx_is_logged_with_its_reason_and_counted(
    make_bot: MakeBot, caplog: pytest.LogCaptureFixture
) -> None:
    """A wrong bearer token and a body over the cap: one WARNING each naming the route, the
    status and the reason; counted by route and code; the token itself is never logged."""
    bot = await make_bot(webhook_token="hunter2-token")
    with caplog.at_level(logging.WARNING, logger="gpubot.web.refusals"):
        await bot.post(XID79, authorization="Bearer wrong-token-value")
        await bot.client.post("/agent/events", content=b"{}")
    m = await bot.metrics()

    refused = [r for r in caplog.records if getattr(r, "event", None) == "http.refused"]
    assert [(r.path, r.status, r.reason) for r in refused] == [  # type: ignore[attr-defined]
        ("/alertmanager", 401, "missing or wrong bearer token"),
        ("/agent/events", 401, "missing or wrong agent bearer token"),
    ]
    assert refused[0].getMessage() == (
        "refused POST /alertmanager: 401 missing or wrong bearer token"
    )
    assert "wrong-token-value" not in caplog.text
    assert m[("gpubot_http_refusals_total", (("code", "401"), ("route", "/alertmanager")))] == 1
    assert m[("gpubot_http_refusals_total", (("code", "401"), ("route", "/agent/events")))] == 1


async def test_a_path_nobody_serves_is_counted_as_other(
    make_bot: MakeBot, caplog: pytest.LogCaptureFixture
) -> None:
    """A 404 for a made-up path: the label is `other`, never what the client sent."""
    bot = await make_bot()
    with caplog.at_level(logging.WARNING, logger="gpubot.web.refusals"):
        await bot.client.get("/forged%0Aline")
    m = await bot.metrics()

    assert m[("gpubot_http_refusals_total", (("code", "404"), ("route", "other")))] == 1
    assert not any("forged" in r.getMessage() for r in caplog.records)


async def test_a_body_over_the_limit_and_a_rejected_alert_are_logged_with_their_reasons(
    make_bot: MakeBot, caplog: pytest.LogCaptureFixture
) -> None:
    """413 from the body limit (before any route reads it) names the limit; an alert intake
    rejects on its own (the request is 2xx) is logged with the reason as a field."""
    bot = await make_bot(max_body_bytes=4096)
    bad = json.loads(XID79)
    bad["alerts"][0]["labels"]["xid"] = "seventy-nine"
    with caplog.at_level(logging.WARNING, logger="gpubot"):
        too_big = await bot.post(b"{" + b" " * 5000 + b"}")
        rejected = await bot.post(json.dumps(bad).encode())

    assert too_big.status_code == 413
    assert rejected.status_code == 200
    by_event = {getattr(r, "event", None): r for r in caplog.records}
    assert by_event["http.refused"].getMessage() == (
        "refused POST /alertmanager: 413 body larger than 4096 bytes"
    )
    assert "xid" in by_event["alert.rejected"].reason  # type: ignore[attr-defined]


async def test_a_refusal_retried_by_the_tick_is_not_counted_again(make_bot: MakeBot) -> None:
    """One attempt allowed: the node's first XID incident runs; after it resolves, a second
    incident on that node is refused (counted once). The periodic tick retries the incident
    that has no run, quietly: neither the counter nor the log repeats it."""
    bot = await make_bot(attempts={"max_attempts": 1})
    await bot.post(XID79)
    resolved = json.loads(XID79)
    resolved["status"] = "resolved"
    for alert in resolved["alerts"]:
        alert["status"] = "resolved"
        alert["endsAt"] = "2026-11-22T10:00:00Z"
    await bot.post(json.dumps(resolved).encode())
    again = json.loads(XID79)
    for alert in again["alerts"]:
        alert["fingerprint"] = "0000aaaa1111bbbb"
        alert["startsAt"] = "2026-11-22T11:00:00Z"
    again["groupKey"] += "-again"
    await bot.post(json.dumps(again).encode())
    assert len(await bot.app.store.list_incidents()) == 2
    first = await bot.metrics()

    await bot.app.service.background.tick()
    await bot.app.service.wait_idle()
    later = await bot.metrics()

    key = ("gpubot_attempt_cap_refusals_total", (("runbook", "xid79"),))
    assert first[key] == 1
    assert later[key] == 1


def test_a_sharded_replica_reports_the_shards_it_executes() -> None:
    """gpubot_shards_held: read at each scrape, only where replicas execute by shard."""
    held = [3]
    watched = Watched(shards=lambda: (held[0], 6))
    sharded = {m.name: m for m in StateCollector(watched).collect()}
    assert sharded["gpubot_shards_held"].samples[0].value == 3
    assert sharded["gpubot_shards"].samples[0].value == 6
    held[0] = 0  # its shards moved to the other replicas
    sharded = {m.name: m for m in StateCollector(watched).collect()}
    assert sharded["gpubot_shards_held"].samples[0].value == 0
    alone = {m.name for m in StateCollector(Watched(is_leader=lambda: True)).collect()}
    assert "gpubot_shards_held" not in alone
