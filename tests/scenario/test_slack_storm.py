"""Alert storm: one thread per incident, the per-channel rate held, 429s and 5xx survived."""

from __future__ import annotations

import copy
import itertools
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from slack_harness import CHANNEL, FIXTURES, SlackHarness, slack_harness
from slack_standin import Call

RATE = 100.0  # messages per second per channel: Slack's 1/s, compressed for the test
NODES, PER_NODE = 100, 10


@pytest.fixture(autouse=True)
def _no_env_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("GPUBOT_", "SLACK_")):
            monkeypatch.delenv(name)


@pytest.fixture
async def h(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SlackHarness]:
    async with slack_harness(tmp_path, monkeypatch, rate=RATE) as harness:
        yield harness


def storm_payloads() -> list[bytes]:
    """1,000 alerts over 100 nodes, 10 alerts (one per GPU metric) per node, per payload."""
    template = json.loads((FIXTURES / "xid79_firing.json").read_text())
    payloads = []
    for n in range(NODES):
        body = copy.deepcopy(template)
        node = f"storm-node-{n:03d}"
        alerts: list[dict[str, Any]] = []
        for i in range(PER_NODE):
            alert = copy.deepcopy(template["alerts"][0])
            alert["labels"].update(
                {"alertname": "GPUStormTest", "Hostname": node, "gpu": str(i % 8), "probe": str(i)}
            )
            alert["fingerprint"] = f"{n:04x}{i:04x}deadbeef"
            alerts.append(alert)
        body["alerts"] = alerts
        body["groupKey"] = f'{{}}:{{Hostname="{node}"}}'
        payloads.append(json.dumps(body).encode())
    return payloads


def max_in_window(calls: list[Call], window: float) -> int:
    times = sorted(c.at for c in calls)
    best, start = 0, 0
    for end, t in enumerate(times):
        while t - times[start] >= window:
            start += 1
        best = max(best, end - start + 1)
    return best


def min_gap(calls: list[Call]) -> float:
    times = sorted(c.at for c in calls)
    return min(b - a for a, b in itertools.pairwise(times))


async def storm(h: SlackHarness) -> None:
    for body in storm_payloads():
        reply = await h.client.post(
            "/alertmanager", content=body, headers={"content-type": "application/json"}
        )
        assert reply.status_code == 200
    await h.settle()


def channel_calls(h: SlackHarness) -> list[Call]:
    return [c for c in h.standin.calls if c.method in ("chat.postMessage", "chat.update")]


async def test_storm_one_root_per_incident_and_the_rate_held(h: SlackHarness) -> None:
    await storm(h)
    roots = h.standin.roots(CHANNEL)
    assert len(await h.app.store.list_incidents(limit=1000)) == NODES
    assert len(roots) == NODES
    assert len({r.text for r in roots}) == NODES
    for root in roots:
        assert len(h.standin.thread(root.ts)) == 1  # "No runbook matches this alert"
    # Never more than the configured rate: consecutive calls arrive at least 1/RATE apart,
    # so no one-second window holds more than RATE (+1 at the boundary).
    calls = channel_calls(h)
    assert min_gap(calls) >= 0.999 / RATE
    assert max_in_window(calls, 1.0) <= RATE + 1


async def test_storm_with_429_and_500_loses_nothing(h: SlackHarness) -> None:
    h.standin.fail("chat.postMessage", status=429, retry_after=0.3, times=4)
    h.standin.fail("*", status=500, retry_after=None, times=3)
    await storm(h)
    failed = [c for c in h.standin.calls if c.status != 200]
    assert sorted(c.status for c in failed) == [429] * 4 + [500] * 3
    roots = h.standin.roots(CHANNEL)
    assert len(roots) == NODES  # every one arrived, none twice
    assert sum(len(h.standin.thread(r.ts)) for r in roots) == NODES
    assert min_gap(channel_calls(h)) >= 0.999 / RATE
    stats = h.slack.notifier.outbox.stats
    assert stats.rate_limited == 4
    assert stats.server_errors == 3
    # After a 429 the channel waited Retry-After before its next call.
    calls = channel_calls(h)
    for i, call in enumerate(calls[:-1]):
        if call.status == 429:
            assert calls[i + 1].at - call.at >= 0.29
