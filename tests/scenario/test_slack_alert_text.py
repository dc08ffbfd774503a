"""Alert text reaches Slack as data, and Slack's Web API failing never leaves a user unanswered.

A real-shaped Alertmanager payload whose annotations and URLs carry `<!channel>`, mentions and
relabelled links goes through the whole flow; what the Slack stand-in received is checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from slack_harness import CHANNEL, FIXTURES, SlackHarness

from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.slack.listeners import FAILED

HOSTILE = (
    "<!channel> <!here> <!everyone> GPU down: ask <@U0ADMIN> in <#C0GENERAL> "
    "<!subteam^S0ALL> or <https://evil.example/login|the runbook> & <mailto:x@evil.example>"
)
# gpubot's own links: an http(s) URL (| and < > percent-encoded) with gpubot's label.
OURS = re.compile(r"<https?://[^|<>\s]+\|(?:Alert source|Runbook)>")


pytestmark = pytest.mark.usefixtures("clean_env")


def hostile_payload() -> bytes:
    payload = json.loads((FIXTURES / "xid79_firing.json").read_text())
    annotations = {
        "summary": f"XID 79 {HOSTILE}",
        "description": HOSTILE,
        "runbook_url": "https://evil.example/x|Runbook <!channel>",
    }
    for alert in payload["alerts"]:
        alert["annotations"] = annotations
        alert["generatorURL"] = "javascript:fetch('https://evil.example')"
    payload["commonAnnotations"] = annotations
    return json.dumps(payload).encode()


def mrkdwn_texts(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        if value.get("type") == "mrkdwn" and isinstance(value.get("text"), str):
            yield value["text"]
        for v in value.values():
            yield from mrkdwn_texts(v)
    elif isinstance(value, list):
        for v in value:
            yield from mrkdwn_texts(v)


def sent_texts(h: SlackHarness) -> list[str]:
    """Every text gpubot sent Slack: fallback texts and every mrkdwn field of every block."""
    out = []
    for call in h.standin.calls:
        if call.method in ("chat.postMessage", "chat.update", "chat.postEphemeral"):
            out.append(str(call.args.get("text", "")))
            raw = call.args.get("blocks") or []
            out.extend(mrkdwn_texts(json.loads(raw) if isinstance(raw, str) else raw))
    return out


async def test_hostile_annotations_reach_slack_escaped(h: SlackHarness) -> None:
    inject_xid(h.sim, node="gpu-node-07", gpu=3)
    reply = await h.client.post(
        "/alertmanager", content=hostile_payload(), headers={"content-type": "application/json"}
    )
    assert reply.status_code == 200
    await h.settle()
    [root] = h.standin.roots(CHANNEL)
    texts = sent_texts(h)
    assert len(texts) > 4  # root, plan, approval request, progress
    for text in texts:
        bare = OURS.sub("", text)
        assert "<" not in bare, text
        assert ">" not in bare, text
    # Shown as typed, in the blocks and in the notification text.
    assert "&lt;!channel&gt; &lt;!here&gt; &lt;!everyone&gt; GPU down" in root.text
    assert "ask &lt;@U0ADMIN&gt; in &lt;#C0GENERAL&gt;" in json.dumps(root.blocks)
    links = " ".join(mrkdwn_texts(root.blocks))
    assert "<https://evil.example/x%7CRunbook%20%3C!channel%3E|Runbook>" in links
    assert "Alert source: javascript:" in links  # not a link at all
    assert "|the runbook>" not in json.dumps([c.args for c in h.standin.calls])


async def test_web_api_unreachable_slash_command_gets_an_ephemeral_error(
    h: SlackHarness,
) -> None:
    """Slack's Web API refuses connections (bolt's first auth.test cannot run): the slash
    command's own answer is the ephemeral error, never a 500."""
    h.slack.app.client.base_url = "http://127.0.0.1:9/api/"  # nothing listens on port 9
    reply = await h.slash("help")
    assert reply.status_code == 200
    assert reply.json() == {"response_type": "ephemeral", "text": FAILED}


async def test_web_api_failing_after_the_ack_answers_through_the_response_url(
    h: SlackHarness,
) -> None:
    """A refused click is told through chat.postEphemeral; with the Web API gone (after
    bolt's auth.test succeeded), it is told through the click's response_url instead."""
    assert (await h.slash("help")).status_code == 200  # auth.test done and cached
    await h.standin.wait_for(lambda: bool(h.standin.of("response_url")))
    h.slack.app.client.base_url = "http://127.0.0.1:9/api/"
    reply = await h.click("apr-does-not-exist", user="U9")
    assert reply.status_code == 200
    await h.standin.wait_for(lambda: len(h.standin.of("response_url")) >= 2)
    answer = h.standin.of("response_url")[-1].args
    assert answer["response_type"] == "ephemeral"
    assert answer["replace_original"] is False
    assert answer["text"] == FAILED


async def test_web_api_unreachable_before_the_ack_a_click_is_told_through_response_url(
    h: SlackHarness,
) -> None:
    """Slack's Web API is down from the start (bolt's auth.test fails before the ack): the
    click is answered 200 and told through its response_url."""
    h.slack.app.client.base_url = "http://127.0.0.1:9/api/"
    reply = await h.click("apr-does-not-exist", user="U9")
    assert (reply.status_code, reply.content) == (200, b"")
    await h.standin.wait_for(lambda: bool(h.standin.of("response_url")))
    [answer] = h.standin.of("response_url")
    assert answer.args["text"] == FAILED
    assert answer.args["response_type"] == "ephemeral"
