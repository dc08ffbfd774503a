"""Attacks on a real `gpubot serve`'s /slack/events (HTTP mode, SQLite, on 127.0.0.1).

Unsigned garbage, malformed timestamps and replays of a signed slash command, each against
the process as operators run it, with the Slack stand-in as Slack's Web API and response_url.
Two replicas on one database share the record of accepted requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

import httpx
import pytest
from reliability_procs import Procs, free_port, serve, write_config
from slack_harness import SECRET, sign, trigger_id
from slack_sdk.signature import SignatureVerifier
from slack_standin import SlackStandin, serve_standin

from gpubot.backends.store import open_store
from gpubot.slack.workspace import NOT_HERE

REPLAYED = "slack: a request already accepted came again"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "alertmanager"


@dataclass
class Replica:
    url: str
    log: Path


@dataclass
class Served:
    replicas: list[Replica]
    standin: SlackStandin
    db: Path

    async def post(
        self, body: bytes, headers: dict[str, str], *, replica: int = 0
    ) -> httpx.Response:
        async with httpx.AsyncClient(timeout=10) as client:
            return await client.post(
                self.replicas[replica].url + "/slack/events",
                content=body,
                headers={"content-type": "application/x-www-form-urlencoded", **headers},
            )

    def slash(self, text: str, *, response: str) -> bytes:
        return urlencode(
            {
                "team_id": "T0001",
                "channel_id": "C0INCIDENTS",
                "user_id": "U1",
                "command": "/gpu",
                "api_app_id": "A0001",
                "text": text,
                "response_url": self.standin.response_url(response),
                "trigger_id": trigger_id(),
            }
        ).encode()

    async def runs(self) -> int:
        store = open_store(f"sqlite:///{self.db}")
        try:
            return len(await store.list_runs())
        finally:
            await store.close()


@contextlib.asynccontextmanager
async def replicas(tmp_path: Path, procs: Procs, names: tuple[str, ...]) -> AsyncIterator[Served]:
    """`gpubot serve` replicas on one SQLite file, Slack in HTTP mode."""
    db = tmp_path / "gpubot.db"
    async with serve_standin() as standin:
        config = write_config(
            tmp_path / "gpubot.yaml",
            slack={
                "mode": "http",
                "team_id": "T0001",
                "app_id": "A0001",
                "channel": "C0INCIDENTS",
                "api_url": standin.api_url,
            },
            store={"url": f"sqlite:///{db}"},
        )
        started = []
        for name in names:
            port = free_port()
            serve(
                procs,
                config,
                port=port,
                name=name,
                SLACK_BOT_TOKEN="xoxb-test",
                SLACK_SIGNING_SECRET=SECRET,
            )
            started.append(Replica(f"http://127.0.0.1:{port}", tmp_path / f"{name}.log"))
        try:
            yield Served(started, standin, db)
        finally:
            # Stopped while the stand-in still answers (and off the loop that serves it), so
            # each replica's last messages go out instead of waiting out its shutdown grace.
            await asyncio.to_thread(procs.stop)


@pytest.fixture
async def served(tmp_path: Path, procs: Procs) -> AsyncIterator[Served]:
    async with replicas(tmp_path, procs, ("a",)) as one:
        yield one


@pytest.fixture
async def two(tmp_path: Path, procs: Procs) -> AsyncIterator[Served]:
    async with replicas(tmp_path, procs, ("a", "b")) as both:
        yield both


def _one_line_401(reply: httpx.Response) -> str:
    assert reply.status_code == 401, reply.text
    error = reply.json()["error"]
    assert isinstance(error, str)
    assert error.startswith("invalid request: ")
    assert "\n" not in error
    return error


async def test_unsigned_garbage_is_refused_at_once_and_never_parsed(served: Served) -> None:
    """Half a MiB that is not UTF-8, not a form and not JSON, unsigned or signed with another
    secret: 401 in well under a second, and the server logs no traceback; /healthz answers."""
    garbage = b"payload=%7B%22" + b"\xff\xfe[" * (170 * 1024)
    for headers in ({}, sign(garbage, secret="not-the-secret")):
        started = time.perf_counter()
        _one_line_401(await served.post(garbage, headers))
        assert time.perf_counter() - started < 1.0
    async with httpx.AsyncClient(timeout=5) as client:
        assert (await client.get(served.replicas[0].url + "/healthz")).status_code == 200
    assert "Traceback" not in served.replicas[0].log.read_text()


async def test_malformed_timestamps_are_401_with_one_line(served: Served) -> None:
    """Not ASCII digits, or absurd: 401 with one line each, never a 500 or a traceback."""
    body = served.slash("help", response="ts")
    for stamp in ("", "soon", "1e9", "+1764000000", "1_764_000_000", "9" * 40, "-300"):
        headers = {**sign(body), "X-Slack-Request-Timestamp": stamp}
        assert "timestamp" in _one_line_401(await served.post(body, headers)).lower()
    assert "Traceback" not in served.replicas[0].log.read_text()


async def test_unicode_digit_timestamp_is_401(served: Served) -> None:
    """'²' is a digit to int(); as raw header bytes it is refused like any other garbage."""
    body = served.slash("help", response="ts")
    async with httpx.AsyncClient(timeout=10) as client:
        reply = await client.post(
            served.replicas[0].url + "/slack/events",
            content=body,
            headers={
                "content-type": "application/x-www-form-urlencoded",
                "X-Slack-Signature": sign(body)["X-Slack-Signature"],
                "X-Slack-Request-Timestamp": "١٧٦٤٠٠٠٠٠٠".encode(),  # type: ignore[dict-item]
            },
        )
    _one_line_401(reply)


async def test_replayed_slash_command_starts_one_run_on_any_replica(two: Served) -> None:
    """A signed `/gpu run` is accepted once: the same bytes again (to the same replica, and
    to the other one as Slack's retry) get an empty 200; one run, one answer."""
    body = two.slash("run xid79 node=gpu-node-02 --dry-run", response="run")
    headers = sign(body)
    assert (await two.post(body, headers)).status_code == 200
    await two.standin.wait_for(lambda: bool(two.standin.of("response_url")))
    assert await two.runs() == 1

    again = await two.post(body, headers)
    retry = await two.post(body, {**headers, "X-Slack-Retry-Num": "1"}, replica=1)
    for reply in (again, retry):
        assert (reply.status_code, reply.content) == (200, b"")
    # Each replica says why it did nothing: the edge refused, bolt never saw the request.
    for replica in two.replicas:
        assert REPLAYED in replica.log.read_text()
    assert await two.runs() == 1
    answers = [c for c in two.standin.of("response_url")]
    assert len(answers) == 1
    assert "Started dry run" in json.dumps(answers[0].args)

    # A new request (its own trigger_id, so its own signature) is still two.
    fresh = two.slash("run xid79 node=gpu-node-03 --dry-run", response="fresh")
    assert (await two.post(fresh, sign(fresh), replica=1)).status_code == 200
    await two.standin.wait_for(lambda: len(two.standin.of("response_url")) == 2)
    assert await two.runs() == 2


async def test_hostile_alert_text_reaches_slack_escaped(served: Served) -> None:
    """An Alertmanager payload whose annotations page everyone and relabel links, sent to
    the real process: every text it posts to Slack holds no markup but its own links."""
    payload = json.loads((FIXTURES / "xid79_firing.json").read_text())
    hostile = "<!channel> <!everyone> ask <@U0ADMIN> <#C0GENERAL> <https://evil.example|Runbook>"
    for alert in payload["alerts"]:
        alert["annotations"] = {"summary": hostile, "description": hostile}
        alert["generatorURL"] = "https://evil.example/|Alert source"
    async with httpx.AsyncClient(timeout=10) as client:
        reply = await client.post(served.replicas[0].url + "/alertmanager", json=payload)
    assert reply.status_code == 200
    posted = served.standin
    await posted.wait_for(lambda: len(posted.of("chat.postMessage")) >= 2)
    ours = re.compile(r"<https?://[^|<>\s]+\|(?:Alert source|Runbook)>")
    calls = [c for c in posted.calls if c.method in ("chat.postMessage", "chat.update")]
    for call in calls:
        blocks = call.args.get("blocks") or "[]"
        sent = json.dumps(json.loads(blocks) if isinstance(blocks, str) else blocks)
        for text in (str(call.args.get("text", "")), sent):
            bare = ours.sub("", text)
            assert "<" not in bare, text
            assert ">" not in bare, text
    assert "&lt;!channel&gt; &lt;!everyone&gt; ask &lt;@U0ADMIN&gt;" in calls[0].args["text"]


def sdk_signed(body: bytes) -> dict[str, str]:
    """Signed with slack_sdk's own SignatureVerifier and the app's real signing secret."""
    stamp = str(int(time.time()))
    signature = SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=body)
    assert signature is not None
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature}


def _click(**fields: object) -> bytes:
    payload = {
        "type": "block_actions",
        "team": {"id": "T0001", "domain": "test"},
        "user": {"id": "U1", "username": "u1", "team_id": "T0001"},
        "api_app_id": "A0001",
        "trigger_id": trigger_id(),
        "channel": {"id": "C0INCIDENTS"},
        "container": {"type": "message", "message_ts": "1.1", "channel_id": "C0INCIDENTS"},
        "actions": [{"action_id": "gpubot_approve", "value": "appr-unknown"}],
        **fields,
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


FOREIGN_SLASH = {
    "other-team": {"team_id": "T0OTHER"},
    "other-app": {"api_app_id": "A0OTHER"},
    "no-app": {"api_app_id": ""},
    "an-org": {"enterprise_id": "E0OTHER"},
}
FOREIGN_CLICKS = {
    "other-team": {"team": {"id": "T0OTHER"}},
    "other-users-team": {"user": {"id": "U1", "team_id": "T0OTHER"}},
    "other-app": {"api_app_id": "A0OTHER"},
    "an-org": {"enterprise": {"id": "E0OTHER"}},
}


async def test_signed_requests_from_another_workspace_or_app_do_nothing(served: Served) -> None:
    """`/gpu run` and Approve clicks correctly signed with the app's secret, but naming
    another team, org or app: the command gets an ephemeral refusal, a click 403; no run
    starts, no listener answers, and each is counted by field in /metrics. A request from
    the workspace itself, sent after them, still runs."""
    log = served.replicas[0].log
    for name, fields in FOREIGN_SLASH.items():
        form = dict(
            parse_qsl(
                served.slash(
                    f"run xid79 node=gpu-node-02 --dry-run # {name}", response=name
                ).decode()
            )
        )
        body = urlencode({**form, **fields}).encode()
        reply = await served.post(body, sdk_signed(body))
        assert reply.status_code == 200, name
        assert reply.json() == {"response_type": "ephemeral", "text": NOT_HERE}, name
    for name, fields in FOREIGN_CLICKS.items():
        body = _click(**fields)
        reply = await served.post(body, sdk_signed(body))
        assert reply.status_code == 403, name
        error = reply.json()["error"]
        assert error.startswith("not this workspace: "), error
        assert "\n" not in error

    mine = served.slash("run xid79 node=gpu-node-03 --dry-run", response="mine")
    assert (await served.post(mine, sdk_signed(mine))).status_code == 200
    await served.standin.wait_for(lambda: bool(served.standin.of("response_url")))
    assert await served.runs() == 1
    [answer] = served.standin.of("response_url")
    assert "Started dry run" in json.dumps(answer.args)
    assert not served.standin.of("chat.postEphemeral")  # no click reached its listener
    async with httpx.AsyncClient(timeout=5) as client:
        metrics = (await client.get(served.replicas[0].url + "/metrics")).text
    counted = dict(
        re.findall(r'gpubot_slack_foreign_requests_total\{field="(\w+)"\} (\d+)', metrics)
    )
    assert counted == {"team": "3", "app": "3", "enterprise": "2"}, counted
    assert log.read_text().count("refused a signed request for another workspace") == 8
    assert "Traceback" not in log.read_text()
