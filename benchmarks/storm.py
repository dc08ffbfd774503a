"""Alert storm → Slack: roots created, peak Slack calls per second per channel, dropped.

Prints one JSON line. 1,000 alerts over 100 nodes (10 per node, one per GPU metric) arrive as
Alertmanager sends a storm grouped by alertname: 100 payloads of 10 alerts, each payload
about 10 different nodes, so every node's alerts come in 10 different payloads. They go
through the real web app (httpx's ASGI transport), 8 payloads at a time, into build_app's
service with Slack in HTTP mode against the Slack Web API stand-in from tests/ (aiohttp on
loopback). The stand-in answers 4 calls with 429 (Retry-After 0.3 s) and 3 with 500.

Time is compressed 100x: the per-channel rate is 100 calls/s where Slack allows about 1/s.
Figures: incidents and root messages created, replies, calls, the peak calls in any 1 s window
of one channel and the smallest gap between two calls, messages dropped (the outbox gave up,
or an incident has no root). Baseline: a bridge that posts one message per alert.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import itertools
import json
import logging
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
from _report import REPO, at_most, emit, use_test_helpers

from gpubot.config import load_settings
from gpubot.web.app import create_app
from gpubot.wiring import build_app

RATE = 100.0  # calls per second per channel: Slack's ~1/s, compressed 100x
PER_NODE = 10
CONCURRENCY = 8
CHANNEL = "#gpu-incidents"
TEMPLATE = json.loads((REPO / "tests/fixtures/alertmanager/alertmanager_firing.json").read_text())


def storm(alerts: int) -> list[bytes]:
    """`alerts` alerts over alerts/10 nodes, as payloads of 10 alerts about 10 nodes each."""
    nodes = max(1, alerts // PER_NODE)
    flat = [(n, i) for i in range(PER_NODE) for n in range(nodes)][:alerts]
    payloads = []
    for start in range(0, len(flat), PER_NODE):
        body = copy.deepcopy(TEMPLATE)
        body["alerts"] = [alert(n, i) for n, i in flat[start : start + PER_NODE]]
        body["groupLabels"] = {"alertname": "GPUMemoryNearFull", "cluster": "sim"}
        body["commonLabels"] = body["groupLabels"]
        body["groupKey"] = '{}:{alertname="GPUMemoryNearFull", cluster="sim"}'
        payloads.append(json.dumps(body).encode())
    return payloads


def alert(node: int, metric: int) -> dict[str, Any]:
    item = copy.deepcopy(TEMPLATE["alerts"][0])
    hostname = f"storm-node-{node:03d}"
    item["labels"] = {
        "alertname": "GPUMemoryNearFull",
        "cluster": "sim",
        "severity": "warning",
        "Hostname": hostname,
        "gpu": str(metric % 8),
        "probe": str(metric),
    }
    item["annotations"] = {"summary": f"GPU {metric % 8} memory on {hostname} is 97% used"}
    item["fingerprint"] = f"{node:06x}{metric:04x}5709"
    return item


class GaveUp(logging.Handler):
    """Counts the messages the outbox gave up on (it logs each at ERROR)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def peak_in_window(times: list[float], window: float = 1.0) -> int:
    times = sorted(times)
    best, start = 0, 0
    for end, at in enumerate(times):
        while at - times[start] >= window:
            start += 1
        best = max(best, end - start + 1)
    return best


async def main(alerts: int) -> None:
    use_test_helpers("scenario")
    from slack_standin import serve_standin

    gave_up = GaveUp()
    logging.getLogger("gpubot.slack.outbox").addHandler(gave_up)
    payloads = storm(alerts)
    with tempfile.TemporaryDirectory(prefix="gpubot-bench-") as tmp:
        async with serve_standin() as standin:
            standin.fail("chat.postMessage", status=429, retry_after=0.3, times=4)
            standin.fail("*", status=500, retry_after=None, times=3)
            settings = load_settings(
                None,
                store={"url": f"sqlite:///{Path(tmp) / 'storm.db'}"},
                slack={
                    "mode": "http",
                    "team_id": "T0001",
                    "app_id": "A0001",
                    "channel": CHANNEL,
                    "api_url": standin.api_url,
                    "rate_per_second": RATE,
                },
                SLACK_BOT_TOKEN="xoxb-bench",
                SLACK_SIGNING_SECRET="bench-signing-secret",
            )
            app = build_app(settings)
            assert app.slack is not None
            web = create_app(app.service, slack_events=app.slack.handle_http)
            transport = httpx.ASGITransport(app=web)
            started = time.perf_counter()
            try:
                async with httpx.AsyncClient(transport=transport, base_url="http://b") as client:
                    gate = asyncio.Semaphore(CONCURRENCY)

                    async def deliver(body: bytes) -> None:
                        async with gate:
                            reply = await client.post(
                                "/alertmanager",
                                content=body,
                                headers={"content-type": "application/json"},
                            )
                        if reply.status_code != 200:
                            raise RuntimeError(f"HTTP {reply.status_code}: {reply.text}")

                    await asyncio.gather(*(deliver(body) for body in payloads))
                    accepted = time.perf_counter() - started
                    for _ in range(3):  # runs post, the outbox sends: until both are quiet
                        await app.service.wait_idle()
                        await app.slack.notifier.outbox.flush()
                drained = time.perf_counter() - started
                incidents = len(await app.store.list_incidents(limit=alerts + 1))
            finally:
                await app.aclose()
            report(standin, alerts, incidents, gave_up.count, accepted, drained)


def report(
    standin: Any, alerts: int, incidents: int, gave_up: int, accepted: float, drained: float
) -> None:
    roots = standin.roots(CHANNEL)
    replies = sum(len(standin.thread(root.ts)) for root in roots)
    calls = [c for c in standin.calls if c.method in ("chat.postMessage", "chat.update")]
    by_channel: dict[str | None, list[float]] = defaultdict(list)
    for call in calls:
        by_channel[call.channel].append(call.at)
    peak = max((peak_in_window(times) for times in by_channel.values()), default=0)
    gaps = [b - a for times in by_channel.values() for a, b in itertools.pairwise(sorted(times))]
    dropped = gave_up + max(0, incidents - len(roots))
    emit(
        "storm",
        alerts=alerts,
        nodes=max(1, alerts // PER_NODE),
        payloads=len(storm(alerts)),
        incidents=incidents,
        roots_created=len(roots),
        thread_replies=replies,
        slack_calls=len(calls),
        slack_calls_failed_and_retried=sum(1 for c in calls if c.status != 200),
        configured_rate_per_s=RATE,
        peak_calls_per_s_per_channel=peak,
        min_gap_between_calls_ms=round(min(gaps, default=0.0) * 1000, 2),
        dropped=dropped,
        accepted_s=round(accepted, 2),
        all_sent_s=round(drained, 2),
        baseline_one_message_per_alert={
            "messages": alerts,
            "minutes_at_slack_1_per_s": round(alerts / 60, 1),
        },
        gpubot_minutes_at_slack_1_per_s=round(len(calls) / 60, 1),
        targets={
            "roots_created": at_most(len(roots), 100),
            "peak_calls_per_s_per_channel": at_most(peak, RATE),
            "dropped": at_most(dropped, 0),
        },
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="alerts (default 1000; 10 per node)")
    asyncio.run(main(parser.parse_args().n))
