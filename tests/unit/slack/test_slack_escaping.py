"""Alert text is data: no text in a built message can mention, page or relabel a link."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpubot.domain.control.approvals import ApprovalRequest, ApprovalStatus, Vote
from gpubot.domain.incidents.correlation import Incident, IncidentStatus
from gpubot.domain.results import Button, Code, Fields, Message, Table, Text
from gpubot.slack import blocks, mrkdwn
from gpubot.slack.notifier import merge_progress
from gpubot.slack.outbox import Payload

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
LIVE = re.compile(r"<[!@#]|<https?:|<mailto:|<[a-z][a-z0-9+.-]*:", re.IGNORECASE)
ATTACKS = [
    "<!channel>",
    "<!here>",
    "<!everyone>",
    "<@U0ADMIN>",
    "<@W123|boss>",
    "<#C0GENERAL>",
    "<!subteam^S0ONCALL>",
    "<https://evil.example|Runbook>",
    "<mailto:x@evil.example|mail>",
    "&lt;!channel&gt;",
    "<<!channel>>",
    "<\n!channel>",
]
texts = st.one_of(
    st.text(max_size=80),
    st.lists(st.sampled_from([*ATTACKS, "a", " ", "&", "<", ">", "|", "*", "`"]), max_size=8).map(
        "".join
    ),
)
_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def mrkdwn_texts(value: Any) -> Iterator[str]:
    """Every mrkdwn text in Block Kit (plain_text is never read as markup)."""
    if isinstance(value, dict):
        if value.get("type") == "mrkdwn" and isinstance(value.get("text"), str):
            yield value["text"]
        for v in value.values():
            yield from mrkdwn_texts(v)
    elif isinstance(value, list):
        for v in value:
            yield from mrkdwn_texts(v)


def assert_inert(*texts: str) -> None:
    """No markup at all: not one `<` or `>` (so no `<!`, `<@`, `<#`, `<http`), and every `&`
    starts one of Slack's three entities."""
    for text in texts:
        assert LIVE.search(text) is None, text
        assert "<" not in text, text
        assert ">" not in text, text
        assert re.search(r"&(?!amp;|lt;|gt;)", text) is None, text


def incident(**changes: Any) -> Incident:
    base = Incident(
        id="inc-0123456789",
        key="k",
        status=IncidentStatus.OPEN,
        alertname="GPUXidError",
        cluster="sim",
        node="gpu-node-07",
        severity="critical",
        summary="GPU 3 fell off the bus",
        labels={"gpu": "3"},
        annotations={},
        generator_url="",
        created_at=NOW,
        updated_at=NOW,
    )
    return replace(base, **changes)


@_SETTINGS
@given(title=texts, body=texts, key=texts, value=texts, cell=texts, code=texts)
def test_no_text_in_a_message_becomes_live_markup(
    title: str, body: str, key: str, value: str, cell: str, code: str
) -> None:
    message = Message(
        title,
        (Text(body), Fields(((key, value),)), Table(("h",), ((cell,),)), Code(code)),
    )
    out = blocks.message_blocks(message)
    assert_inert(*mrkdwn_texts(out), blocks.fallback_text(message))
    # Merged progress and approval edits are built from the same text.
    merged = merge_progress(Payload("", [], message), Payload("", [], message))
    assert_inert(*mrkdwn_texts(merged.blocks), merged.text)
    request = ApprovalRequest(
        id="apr-1",
        run_id="run-1",
        step_id="drain",
        level="required",
        group="oncall",
        requested_by="alertmanager",
        created_at=NOW,
        expires_at=NOW + timedelta(minutes=30),
    )
    text, decided = blocks.approval_decided(message, request, body)
    assert_inert(*mrkdwn_texts(decided), text)


@_SETTINGS
@given(
    summary=texts,
    alertname=texts,
    gpu=texts,
    node=texts,
    url=st.one_of(texts, st.sampled_from(["https://ok.example/a|Click", "javascript:x"])),
    runbook=texts,
)
def test_incident_root_links_carry_only_gpubots_labels(
    summary: str, alertname: str, gpu: str, node: str, url: str, runbook: str
) -> None:
    inc = incident(
        summary=summary,
        alertname=alertname,
        node=node,
        labels={"gpu": gpu},
        generator_url=url,
        annotations={"runbook_url": runbook},
    )
    text, out = blocks.incident_root(inc, state="open")
    rendered = list(mrkdwn_texts(out))
    # gpubot's own links are the only markup; remove them, and nothing live is left.
    ours = re.compile(r"<https?://[^|<>\s]+\|(?:Alert source|Runbook)>")
    assert_inert(text, *(ours.sub("", t) for t in rendered))


def test_attacks_in_annotations_show_as_typed() -> None:
    summary = "<!channel> GPU down, ask <@U0ADMIN> in <#C0GENERAL> <https://evil.example|here>"
    text, out = blocks.incident_root(
        incident(
            summary=summary,
            generator_url="https://evil.example/x|Alert source <!here>",
            annotations={"runbook_url": "javascript:alert(1)"},
        ),
        state="open",
    )
    assert "&lt;!channel&gt; GPU down, ask &lt;@U0ADMIN&gt;" in text
    links = out[-1]["elements"][0]["text"]
    assert "<https://evil.example/x%7CAlert%20source%20%3C!here%3E|Alert source>" in links
    assert "Runbook: javascript:alert(1)" in links  # shown as text, no link
    assert_inert(text)


def test_declared_mentions_stay_live_and_nothing_else() -> None:
    owner = "<@U7OWNER>"
    message = Message(
        "Idle GPUs",
        (Text(f"{owner}: <!channel> job <@U0ADMIN> is idle"),),
        mentions=(owner, "<!channel>", "<!here>"),  # only user/group shapes can be live
    )
    [_, section] = blocks.message_blocks(message)
    assert section["text"]["text"] == ("<@U7OWNER>: &lt;!channel&gt; job &lt;@U0ADMIN&gt; is idle")
    assert blocks.fallback_text(message).endswith(
        "<@U7OWNER>: &lt;!channel&gt; job &lt;@U0ADMIN&gt; is idle"
    )


def test_voters_are_mentioned_once_not_escaped_twice() -> None:
    request = ApprovalRequest(
        id="apr-1",
        run_id="run-1",
        step_id="drain",
        level="required",
        group="oncall",
        requested_by="alertmanager",
        created_at=NOW,
        expires_at=NOW + timedelta(minutes=30),
        status=ApprovalStatus.APPROVED,
        votes=(Vote("U0APPROVER", "approve", NOW),),
    )
    text, out = blocks.approval_decided(
        Message("Approval needed: <!channel>"), request, "Approved by <@U0APPROVER>. <@U0X>"
    )
    status = out[-1]["elements"][0]["text"]
    assert "Approved by <@U0APPROVER>. &lt;@U0X&gt;" in status
    assert "approved by <@U0APPROVER> at" in status
    assert "&amp;lt;" not in status + text
    assert text.startswith("Approval needed: &lt;!channel&gt;: approved.")


def test_buttons_are_plain_text() -> None:
    [_, button] = blocks.message_blocks(Message("t", (Button("<!channel>", "object", "run-1"),)))
    assert button["elements"][0]["text"]["type"] == "plain_text"


@_SETTINGS
@given(text=texts, limit=st.integers(min_value=1, max_value=40))
def test_cut_never_ends_inside_an_entity_or_a_mention(text: str, limit: int) -> None:
    rendered = mrkdwn.render(text, live=("<@U1>",))
    out = mrkdwn.cut(rendered, limit)
    if out == rendered:
        return
    assert len(out) <= limit
    assert out.endswith("…")
    assert re.search(r"&[a-z]*\Z", out.removesuffix("…")) is None
    assert re.search(r"<[^>]*\Z", out) is None


def test_safe_url() -> None:
    assert mrkdwn.safe_url("https://grafana.example/d?a=1&b=2") == (
        "https://grafana.example/d?a=1&amp;b=2"
    )
    assert (
        mrkdwn.safe_url("http://p:9090/graph?g0.expr=up|x") == "http://p:9090/graph?g0.expr=up%7Cx"
    )
    for bad in ("javascript:alert(1)", "slack://open", "https://", "/relative", "https://a\nb", ""):
        assert mrkdwn.safe_url(bad) is None
