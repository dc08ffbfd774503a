"""Neutral message blocks: what the bot says, independent of Slack or a terminal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Text:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True)
class Fields:
    pairs: tuple[tuple[str, str], ...]
    kind: Literal["fields"] = "fields"


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    kind: Literal["table"] = "table"


@dataclass(frozen=True)
class Code:
    text: str
    kind: Literal["code"] = "code"


@dataclass(frozen=True)
class Button:
    """A button the reader can press; `value` is opaque (a run or approval id), never a command.

    `action` names what the click means to the chat adapter (e.g. "object": keep a workload).
    """

    text: str
    action: str
    value: str
    kind: Literal["button"] = "button"


Block = Text | Fields | Table | Code | Button
# What a message is, so a renderer can treat each kind as it should without reading its title:
# `step` is a step's state and `progress` a step's running commentary (a chat edits both into
# one message per step, keyed by `step_key`); the rest are posted as they are.
MessageKind = Literal[
    "incident", "plan", "approval", "step", "progress", "run", "audit", "held", "note", "report"
]


@dataclass(frozen=True)
class Message:
    """A titled list of blocks; renderers turn it into Block Kit or terminal text.

    All text is data: a chat renderer escapes it (gpubot.slack.mrkdwn), so an alert's
    `<!channel>` shows as typed. `mentions` are the Slack mentions gpubot itself wrote into
    the text (`<@U…>`, `<!subteam^S…>`, built from ids it trusts): only those stay live.
    """

    title: str
    blocks: tuple[Block, ...] = ()
    mentions: tuple[str, ...] = ()
    kind: MessageKind = "note"
    step_key: str | None = None  # "<runbook> > <step>" for `step` and `progress` messages

    def plain(self) -> str:
        """A plain-text rendering, used for logs, fallbacks and tests."""
        lines = [self.title]
        for block in self.blocks:
            if isinstance(block, Text):
                lines.append(block.text)
            elif isinstance(block, Fields):
                lines.extend(f"{k}: {v}" for k, v in block.pairs)
            elif isinstance(block, Table):
                lines.append(" | ".join(block.headers))
                lines.extend(" | ".join(row) for row in block.rows)
            elif isinstance(block, Button):
                lines.append(f"[ {block.text} ]")
            else:
                lines.append(block.text)
        return "\n".join(lines)
