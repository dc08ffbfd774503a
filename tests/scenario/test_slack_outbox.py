"""The Slack notifier and its outbox against the stand-in: threads, merged progress, order."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from slack_sdk.web.async_client import AsyncWebClient
from slack_standin import SlackStandin, serve_standin

from gpubot.clock import FakeClock
from gpubot.domain.incidents.correlation import Incident, IncidentStatus
from gpubot.domain.results import Message, Text
from gpubot.slack.notifier import SlackNotifier
from gpubot.slack.outbox import SlackOutbox

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


class MemoryRefs:
    def __init__(self) -> None:
        self.refs: dict[str, tuple[str, str]] = {}
        self.incidents: dict[str, Incident] = {}

    async def get_chat_ref(self, key: str) -> tuple[str, str] | None:
        return self.refs.get(key)

    async def put_chat_ref(self, key: str, *, channel: str, ts: str) -> None:
        self.refs[key] = (channel, ts)

    async def get_incident(self, incident_id: str) -> Incident:
        return self.incidents[incident_id]


def incident(n: int) -> Incident:
    return Incident(
        id=f"inc-{n:010d}",
        key=str(n),
        status=IncidentStatus.OPEN,
        alertname="GPUXidError",
        cluster="sim",
        node=f"gpu-node-{n:02d}",
        severity="critical",
        summary="XID 79",
        labels={},
        annotations={},
        generator_url="",
        created_at=NOW,
        updated_at=NOW,
    )


@pytest.fixture
async def standin() -> AsyncIterator[SlackStandin]:
    async with serve_standin() as s:
        yield s


async def notifier(
    standin: SlackStandin, rate: float = 500.0, clock: FakeClock | None = None
) -> SlackNotifier:
    client = AsyncWebClient(token="xoxb-test", base_url=standin.api_url)
    outbox = SlackOutbox(client, per_second=rate, clock=clock)
    return SlackNotifier(outbox, MemoryRefs(), channel="#gpu")


async def test_progress_becomes_one_message_edited_in_place(standin: SlackStandin) -> None:
    n = await notifier(standin, rate=20.0)
    inc = incident(1)
    await n.open_thread(incident=inc)
    await n.post(incident_id=inc.id, message=Message("Plan: xid79", kind="plan"))
    key = "xid79 > drain"

    def state(status: str, body: str) -> Message:
        title = f"{key} (node.drain): {status}"
        return Message(title, (Text(body),), kind="step", step_key=key)

    await n.post(incident_id=inc.id, message=state("running", "go"))
    for i in range(10):
        said = Message(key, (Text(f"evicted {i}"),), kind="progress", step_key=key)
        await n.post(incident_id=inc.id, message=said)
    await n.outbox.flush()  # some merged while queued, later ones as chat.update
    await n.post(incident_id=inc.id, message=state("succeeded", "done"))
    await n.post(incident_id=inc.id, message=Message("Run finished", kind="run"))
    await n.outbox.flush()
    await n.outbox.aclose()
    [root] = standin.roots()
    titles = [m.text.splitlines()[0] for m in standin.thread(root.ts)]
    # The fallback text is escaped mrkdwn, as Slack keeps it: ">" is "&gt;".
    assert titles == ["Plan: xid79", "xid79 &gt; drain (node.drain): succeeded", "Run finished"]
    [drain] = [m for m in standin.thread(root.ts) if "drain" in m.text]
    assert "evicted 9" in standin.text_of(drain)
    assert "done" in standin.text_of(drain)
    assert len(standin.of("chat.postMessage")) == 4
    assert n.outbox.stats.merged >= 9


async def test_root_edits_collapse_and_threads_keep_order(standin: SlackStandin) -> None:
    n = await notifier(standin)
    incidents = [incident(i) for i in range(5)]
    for inc in incidents:
        await n.open_thread(incident=inc)
        for k in range(5):
            await n.post(incident_id=inc.id, message=Message(f"{inc.id} message {k}"))
        for state in ("acting", "waiting for approval", "resolved"):
            await n.update_root(incident=inc, state=state)
    await n.outbox.flush()
    await n.outbox.aclose()
    assert len(standin.roots()) == 5
    for root in standin.roots():
        assert "resolved" in root.text
        thread = standin.thread(root.ts)
        assert [m.text.split(" message ")[1] for m in thread] == ["0", "1", "2", "3", "4"]
    # Three state changes queued behind the thread replies: one chat.update is enough.
    assert len(standin.of("chat.update")) <= 5 * 2


async def test_opening_twice_posts_one_root(standin: SlackStandin) -> None:
    n = await notifier(standin)
    inc = incident(1)
    await n.open_thread(incident=inc)
    await n.outbox.flush()
    await n.open_thread(incident=inc)
    await n.outbox.flush()
    await n.outbox.aclose()
    assert len(standin.roots()) == 1


async def test_a_refused_message_does_not_block_the_channel(standin: SlackStandin) -> None:
    n = await notifier(standin)
    standin.fail("chat.postMessage", status=400, retry_after=None, times=1)  # a permanent "no"
    first, second = incident(1), incident(2)
    await n.open_thread(incident=first)
    await n.post(incident_id=first.id, message=Message("reply to a root that never came"))
    await n.open_thread(incident=second)
    await n.post(incident_id=second.id, message=Message("reply"))
    await n.outbox.flush()
    await n.outbox.aclose()
    [root] = standin.roots()
    assert "inc-0000000002" in root.text
    assert [m.text for m in standin.thread(root.ts)] == ["reply"]


async def test_server_errors_back_off_and_then_arrive(standin: SlackStandin) -> None:
    clock = FakeClock()
    n = await notifier(standin, rate=100.0, clock=clock)
    standin.fail("chat.postMessage", status=503, retry_after=None, times=3)
    await n.open_thread(incident=incident(1))
    await n.outbox.flush()
    await n.outbox.aclose()
    tries = standin.of("chat.postMessage", ok_only=False)
    assert [c.status for c in tries] == [503, 503, 503, 200]
    # Exponential backoff from the 0.01 s interval, on fake time: the k-th retry waits
    # exactly 0.01 * 2**k seconds after the failure before it.
    assert clock.slept == pytest.approx([0.02, 0.04, 0.08])
    assert len(standin.roots()) == 1


async def test_a_429_waits_out_retry_after_then_keeps_the_rate(standin: SlackStandin) -> None:
    clock = FakeClock()
    n = await notifier(standin, rate=2.0, clock=clock)
    standin.fail("chat.postMessage", status=429, retry_after=7, times=1)
    await n.open_thread(incident=incident(1))
    await n.open_thread(incident=incident(2))
    await n.outbox.flush()
    await n.outbox.aclose()
    tries = standin.of("chat.postMessage", ok_only=False)
    assert [c.status for c in tries] == [429, 200, 200]
    # Retry-After 7 s, then one call per 0.5 s interval: no real second passed.
    assert clock.slept == pytest.approx([7.0, 0.5])
    assert clock.monotonic() == pytest.approx(7.5)
    assert len(standin.roots()) == 2


async def test_shutdown_gives_up_on_an_unreachable_slack_after_the_grace(
    standin: SlackStandin,
) -> None:
    clock = FakeClock(auto_advance=False)
    n = await notifier(standin, rate=1.0, clock=clock)
    standin.fail("chat.postMessage", status=429, retry_after=3600, times=1)
    await n.open_thread(incident=incident(1))
    flushing = asyncio.ensure_future(n.outbox.clock.wait_for(n.outbox.flush(), 10.0))
    await clock.until_sleeping(2)  # the outbox waits out Retry-After; the grace runs
    assert n.outbox.pending == 1
    await clock.run_for(10.0)
    with pytest.raises(TimeoutError):
        await flushing
    assert n.outbox.pending == 1  # kept, not dropped: still queued when the grace ran out
    await n.outbox.aclose()


async def test_a_summary_is_one_channel_message_edited_in_place(standin: SlackStandin) -> None:
    """The storm summary: posted once in the channel, then every update edits it (queued
    updates collapse to the latest), never a new message."""
    n = await notifier(standin, rate=20.0)
    for held in range(1, 31):
        await n.post_summary(key="blast-radius", message=Message(f"Blast radius: {held} held"))
    await n.outbox.flush()
    await n.post_summary(key="blast-radius", message=Message("Blast radius: 29 held"))
    await n.outbox.flush()
    await n.outbox.aclose()
    [root] = standin.roots()
    assert "29 held" in root.text
    assert len(standin.of("chat.postMessage")) == 1
    assert len(standin.of("chat.update")) <= 3
