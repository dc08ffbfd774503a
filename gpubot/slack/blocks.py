"""Pure Block Kit builders: neutral messages, incident roots and approval requests as data.

Every piece of text is escaped for mrkdwn (gpubot.slack.mrkdwn), in the blocks and in the
fallback text; only the mentions a message declares stay live.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from gpubot.domain.control.approvals import ApprovalRequest, ApprovalStatus
from gpubot.domain.incidents.correlation import Incident
from gpubot.domain.results import Button, Code, Fields, Message, Table, Text
from gpubot.slack import mrkdwn

Block = dict[str, Any]

APPROVE_ACTION = "gpubot_approve"
DENY_ACTION = "gpubot_deny"
OBJECT_ACTION = "gpubot_object"  # "Object — keep it" on an idle-GPU reclamation notice
SECTION_LIMIT = 3000  # characters in one section's text (Block Kit)
FIELD_LIMIT = 2000  # characters in one field
FIELDS_PER_SECTION = 10
FALLBACK_LIMIT = 3000  # the notification text; Slack accepts more, people read less
_SEVERITY_ICON = {"critical": ":red_circle:", "warning": ":large_orange_circle:"}
_STATE_ICON = {
    "open": ":rotating_light:",
    "acting": ":gear:",
    "waiting for approval": ":hourglass_flowing_sand:",
    "resolved": ":white_check_mark:",
}
escape = mrkdwn.escape  # everything, mentions included: outside text pings nobody


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _section(text: str) -> Block:
    """A section of already-rendered mrkdwn."""
    return {"type": "section", "text": {"type": "mrkdwn", "text": mrkdwn.cut(text, SECTION_LIMIT)}}


def _context(text: str) -> Block:
    elements = [{"type": "mrkdwn", "text": mrkdwn.cut(text, SECTION_LIMIT)}]
    return {"type": "context", "elements": elements}


def _fields(pairs: tuple[tuple[str, str], ...], live: Collection[str] = ()) -> list[Block]:
    cells = [
        {
            "type": "mrkdwn",
            "text": mrkdwn.cut(
                f"*{mrkdwn.render(k, live=live)}*\n{mrkdwn.render(v, live=live)}", FIELD_LIMIT
            ),
        }
        for k, v in pairs
    ]
    return [
        {"type": "section", "fields": cells[i : i + FIELDS_PER_SECTION]}
        for i in range(0, len(cells), FIELDS_PER_SECTION)
    ]


def table_text(table: Table, *, width: int = 40) -> str:
    """Aligned monospace columns; cells longer than `width` are cut."""
    rows = [table.headers, *table.rows]
    widths = [min(width, max(len(row[i]) for row in rows)) for i in range(len(table.headers))]
    lines = []
    for n, row in enumerate(rows):
        lines.append("  ".join(_cut(c, w).ljust(w) for c, w in zip(row, widths, strict=True)))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def _table(table: Table) -> Block:
    # Escaped first, so the cut counts the characters Slack receives and keeps whole lines.
    body = escape(table_text(table))
    room = SECTION_LIMIT - 40  # the fences and the "… n more rows" line
    if len(body) > room:
        kept = body[:room].rsplit("\n", 1)[0]
        dropped = body.count("\n") - kept.count("\n")
        body = f"{kept}\n… {dropped} more rows"
    return _section(f"```{body}```")


def message_blocks(message: Message) -> list[Block]:
    """One neutral message as Block Kit: a bold title, then its blocks in order."""
    live = message.mentions
    blocks = [_section(f"*{mrkdwn.render(message.title, live=live)}*")]
    for block in message.blocks:
        if isinstance(block, Text):
            blocks.append(_section(mrkdwn.render(block.text, live=live)))
        elif isinstance(block, Fields):
            blocks.extend(_fields(block.pairs, live))
        elif isinstance(block, Table):
            blocks.append(_table(block))
        elif isinstance(block, Code):
            code = mrkdwn.cut(escape(block.text), SECTION_LIMIT - 8)
            blocks.append(_section(f"```{code}```"))
        elif isinstance(block, Button):
            blocks.append(_button(block))
    return blocks


def _button(button: Button) -> Block:
    """One button in its own actions block; the value is opaque (a run id), never a command.
    Its label is plain_text, which Slack never reads as markup."""
    action_id = f"gpubot_{button.action}"
    return {
        "type": "actions",
        "block_id": action_id,
        "elements": [
            {
                "type": "button",
                "action_id": action_id,
                "text": {"type": "plain_text", "text": _cut(button.text, 75)},
                "style": "primary",
                "value": button.value,
            }
        ],
    }


def without_button(original: list[Block], action_id: str, note: str) -> list[Block]:
    """A message after its button was answered: the same blocks, the button replaced by `note`
    (rendered mrkdwn: see `mrkdwn.render`)."""
    kept = [b for b in original if b.get("block_id") != action_id]
    return [*kept, _context(note)]


def fallback_text(message: Message) -> str:
    """The notification and screen-reader text that goes beside the blocks, escaped alike."""
    return mrkdwn.cut(mrkdwn.render(message.plain(), live=message.mentions), FALLBACK_LIMIT)


def incident_root(incident: Incident, *, state: str) -> tuple[str, list[Block]]:
    """The incident's root message: what, where, how bad, the state, and the links."""
    icon = _SEVERITY_ICON.get(incident.severity.lower(), ":large_yellow_circle:")
    title = f"[{incident.severity.upper()}] {incident.alertname}: {incident.summary}"
    pairs = (
        ("Severity", incident.severity),
        ("Cluster", incident.cluster),
        ("Node", incident.node or "-"),
        ("GPU", incident.labels.get("gpu", "-")),
        ("State", state),
        ("Incident", incident.id),
    )
    blocks = [_section(f"{icon} *{escape(title)}*"), *_fields(pairs)]
    # Links carry gpubot's label; the alert's URL is kept only when it is http(s).
    links = []
    if incident.generator_url:
        links.append(mrkdwn.link(incident.generator_url, "Alert source"))
    if runbook_url := incident.annotations.get("runbook_url"):
        links.append(mrkdwn.link(runbook_url, "Runbook"))
    state_icon = _STATE_ICON.get(state, ":information_source:")
    blocks.append(_context(" · ".join([f"{state_icon} {escape(state)}", *links])))
    return mrkdwn.cut(escape(f"{title} ({incident.id}) — {state}"), FALLBACK_LIMIT), blocks


def approval_request(message: Message, request: ApprovalRequest) -> list[Block]:
    """The request with Approve / Deny buttons; they carry only the opaque approval id."""
    return [*message_blocks(message), _buttons(request.id)]


def _buttons(approval_id: str) -> Block:
    return {
        "type": "actions",
        "block_id": "gpubot_approval",
        "elements": [
            {
                "type": "button",
                "action_id": APPROVE_ACTION,
                "text": {"type": "plain_text", "text": "Approve"},
                "style": "primary",
                "value": approval_id,
            },
            {
                "type": "button",
                "action_id": DENY_ACTION,
                "text": {"type": "plain_text", "text": "Deny"},
                "style": "danger",
                "value": approval_id,
            },
        ],
    }


def _at(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S UTC")


def approval_decided(
    original: Message | None, request: ApprovalRequest, note: str
) -> tuple[str, list[Block]]:
    """The approval message after a vote: who decided and when; buttons only while pending.

    The voters' mentions (Slack user ids from signed clicks) are live, in `note` too."""
    live = tuple(m for v in request.votes if (m := mrkdwn.user_mention(v.user)))
    votes = "; ".join(
        f"{'approved' if v.decision == 'approve' else 'denied'} by "
        f"{mrkdwn.user_mention(v.user) or escape(v.user)} at {_at(v.at)}"
        for v in request.votes
    )
    icon = {
        ApprovalStatus.APPROVED: ":white_check_mark:",
        ApprovalStatus.DENIED: ":no_entry:",
        ApprovalStatus.PENDING: ":hourglass_flowing_sand:",
    }.get(request.status, ":heavy_minus_sign:")
    said = mrkdwn.render(note, live=live)
    status = f"{icon} *{request.status.value}*: {said}" + (f" ({votes})" if votes else "")
    base = message_blocks(original) if original else [_section(f"*Approval {escape(request.id)}*")]
    blocks = [*base, _context(status)]
    if request.status is ApprovalStatus.PENDING:
        blocks.append(_buttons(request.id))
    title = escape(original.title if original else f"Approval {request.id}")
    return mrkdwn.cut(f"{title}: {request.status.value}. {said}", FALLBACK_LIMIT), blocks


def ephemeral(text: str, *, mentions: Collection[str] = ()) -> list[Block]:
    """A one-section answer to one user; `text` is escaped except the declared mentions."""
    return [_section(mrkdwn.render(text, live=mentions))]
