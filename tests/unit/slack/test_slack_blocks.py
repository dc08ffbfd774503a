"""Block Kit builders as data: fields, tables, escaping, roots, approval buttons."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from gpubot.domain.control.approvals import ApprovalRequest, ApprovalStatus, Vote
from gpubot.domain.incidents.correlation import Incident, IncidentStatus
from gpubot.domain.results import Code, Fields, Message, Table, Text
from gpubot.slack import blocks
from gpubot.slack.notifier import Route, merge_progress, route
from gpubot.slack.outbox import Payload

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


def incident(**changes: object) -> Incident:
    base = Incident(
        id="inc-0123456789",
        key="k",
        status=IncidentStatus.OPEN,
        alertname="GPUXidError",
        cluster="sim",
        node="gpu-node-07",
        severity="critical",
        summary="GPU 3 on gpu-node-07 has fallen off the bus (XID 79)",
        labels={"gpu": "3"},
        annotations={"runbook_url": "https://docs.nvidia.com/deploy/xid-errors/"},
        generator_url="http://prometheus:9090/graph?g0.expr=a&b",
        created_at=NOW,
        updated_at=NOW,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def request(**changes: object) -> ApprovalRequest:
    base = ApprovalRequest(
        id="apr-opaque",
        run_id="run-1",
        step_id="drain",
        level="required",
        group="oncall",
        requested_by="alertmanager",
        created_at=NOW,
        expires_at=NOW + timedelta(minutes=30),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def test_message_blocks_title_fields_table_code() -> None:
    msg = Message(
        "Plan: xid79",
        (
            Text("a <b> & c"),
            Fields(tuple((f"k{i}", f"v{i}") for i in range(12))),
            Table(("step", "action"), (("check", "node.gpu_health"), ("drain", "node.drain"))),
            Code("kubectl get nodes"),
        ),
    )
    out = blocks.message_blocks(msg)
    assert out[0] == {"type": "section", "text": {"type": "mrkdwn", "text": "*Plan: xid79*"}}
    assert out[1]["text"]["text"] == "a &lt;b&gt; &amp; c"
    # 12 fields: Block Kit allows 10 per section, so two sections.
    assert [len(b["fields"]) for b in out[2:4]] == [10, 2]
    assert out[2]["fields"][0] == {"type": "mrkdwn", "text": "*k0*\nv0"}
    table = out[4]["text"]["text"]
    assert table.startswith("```step   action")
    assert "drain  node.drain" in table
    assert out[5]["text"]["text"] == "```kubectl get nodes```"


def test_long_table_is_cut_with_a_count() -> None:
    rows = tuple((f"gpu-node-{i:03d}", "x" * 30) for i in range(300))
    [_, block] = blocks.message_blocks(Message("t", (Table(("node", "v"), rows),)))
    text = block["text"]["text"]
    assert len(text) <= blocks.SECTION_LIMIT
    assert "more rows" in text


def test_escape_leaves_no_markup_live() -> None:
    """Outside text pings nobody: mentions in it are escaped like any other `<`."""
    assert blocks.escape("Approved by <@U1> & <!subteam^S9> <x>") == (
        "Approved by &lt;@U1&gt; &amp; &lt;!subteam^S9&gt; &lt;x&gt;"
    )


def test_incident_root_has_what_where_state_and_links() -> None:
    text, out = blocks.incident_root(incident(), state="waiting for approval")
    assert "GPUXidError" in text
    assert "inc-0123456789" in text
    assert "waiting for approval" in text
    fields = {f["text"].split("\n")[0]: f["text"].split("\n")[1] for f in out[1]["fields"]}
    assert fields == {
        "*Severity*": "critical",
        "*Cluster*": "sim",
        "*Node*": "gpu-node-07",
        "*GPU*": "3",
        "*State*": "waiting for approval",
        "*Incident*": "inc-0123456789",
    }
    links = out[-1]["elements"][0]["text"]
    assert "<http://prometheus:9090/graph?g0.expr=a&amp;b|Alert source>" in links
    assert "<https://docs.nvidia.com/deploy/xid-errors/|Runbook>" in links


def test_approval_buttons_carry_only_the_opaque_id() -> None:
    out = blocks.approval_request(Message("Approval needed", (Text("drain"),)), request())
    actions = out[-1]
    assert actions["type"] == "actions"
    assert [(e["action_id"], e["value"]) for e in actions["elements"]] == [
        ("gpubot_approve", "apr-opaque"),
        ("gpubot_deny", "apr-opaque"),
    ]
    assert "drain" not in json.dumps(actions["elements"][0]["value"])


def test_decided_approval_says_who_and_when_and_drops_buttons() -> None:
    decided = request(
        status=ApprovalStatus.APPROVED, votes=(Vote("U1", "approve", NOW + timedelta(minutes=2)),)
    )
    text, out = blocks.approval_decided(Message("Approval needed"), decided, "Approved by <@U1>.")
    assert all(b["type"] != "actions" for b in out)
    status = out[-1]["elements"][0]["text"]
    assert "approved by <@U1> at 2026-11-22 09:02:00 UTC" in status
    assert "approved" in text
    # Two-person, one vote in: still pending, buttons stay.
    partial = request(level="two-person", votes=(Vote("U1", "approve", NOW),))
    _, out = blocks.approval_decided(None, partial, "one more")
    assert out[-1]["type"] == "actions"


def test_routes_first_match_then_default() -> None:
    routes = [
        Route(channel="#prod-critical", cluster="prod", severity="critical"),
        Route(channel="#prod", cluster="prod"),
    ]
    assert route(incident(cluster="prod"), routes, "#gpu") == "#prod-critical"
    assert route(incident(cluster="prod", severity="warning"), routes, "#gpu") == "#prod"
    assert route(incident(), routes, "#gpu") == "#gpu"


def test_progress_merges_into_one_message() -> None:
    def p(m: Message) -> Payload:
        return Payload(m.title, blocks.message_blocks(m), m)

    key = "xid79 > drain"
    running = Message(
        f"{key} (node.drain): running", (Text("evicting 7 pods"),), kind="step", step_key=key
    )
    progress = Message(key, (Text("evicted 3/7"),), kind="progress", step_key=key)
    done = Message(
        f"{key} (node.drain): succeeded", (Text("evicted 7/7"),), kind="step", step_key=key
    )
    merged = merge_progress(merge_progress(p(running), p(progress)), p(done))
    assert merged.source.title == "xid79 > drain (node.drain): succeeded"
    assert [b.text for b in merged.source.blocks] == [
        "evicting 7 pods",
        "evicted 3/7",
        "evicted 7/7",
    ]
