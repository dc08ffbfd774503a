"""ChatNotifier for the terminal: an incident thread as it would read in Slack.

Alert titles, labels and step output come from outside: every line printed has its control
characters shown as escapes (gpubot.domain.terminal, as the CLI shows them), so a newline
or an ANSI sequence in an alert cannot forge a line of the bot's output or restyle it.
"""

from __future__ import annotations

import asyncio
import json
import re
import textwrap
from typing import Any, TextIO

from gpubot.domain.control.approvals import ApprovalRequest
from gpubot.domain.incidents.correlation import Incident
from gpubot.domain.messages import incident_root
from gpubot.domain.results import Button, Code, Fields, Message, Table, Text
from gpubot.domain.terminal import safe

CELL = 60  # widest table cell, in characters
# What textwrap changes in a line that fits: whitespace other than spaces (replaced), and
# whitespace at its end (dropped).
_RESHAPED = re.compile(r"[\t\n\x0b\x0c\r]|\s$")


def readable(cell: str) -> str:
    """A cell holding a JSON object or list (a step's result) as `key: value` pairs."""
    if not cell.startswith(("{", "[")):
        return cell
    try:
        value = json.loads(cell)
    except ValueError:
        return cell
    return _plain(value)


def _plain(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_plain(v)}" for k, v in value.items())
    if isinstance(value, list):
        return f"[{', '.join(_plain(v) for v in value)}]" if value else "none"
    return str(value)


def cut(text: str, width: int) -> str:
    """`text` in at most `width` characters, cut at a word boundary and ended with "…"."""
    if len(text) <= width:
        return text
    head = text[: width - 1]
    space = head.rfind(" ")
    if space > width // 2:  # a word boundary not too far back
        head = head[:space]
    return head.rstrip(" ,;:") + "…"


def _wrap(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` at word boundaries; one line as it is when it fits
    and has no whitespace textwrap would change (most cells: no need to split it)."""
    if len(text) <= width and not _RESHAPED.search(text):
        return [text]
    return textwrap.wrap(text, width, break_on_hyphens=False) or [""]


def _table(table: Table) -> list[str]:
    """Aligned columns; the last column wraps at word boundaries (nothing follows it), the
    others are cut at one with "…"."""
    rows = [[cut(readable(c), CELL) for c in r[:-1]] + [readable(r[-1])] for r in table.rows]
    heads = list(table.headers)
    widths = [max(len(r[i]) for r in [heads, *rows]) for i in range(len(heads) - 1)]
    last = min(CELL, max(len(r[-1]) for r in [heads, *rows]))
    widths.append(last)
    out = []
    for n, row in enumerate([heads, *rows]):
        wrapped = _wrap(row[-1], last)
        first = [cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=False)]
        out.append("  ".join([*first, wrapped[0]]).rstrip())
        pad = "  ".join(" " * w for w in widths[:-1])
        out.extend(f"{pad}  {more}" for more in wrapped[1:])
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def render(message: Message, *, indent: str = "   ") -> list[str]:
    """Terminal lines for a message: fields as `key: value`, tables as aligned columns; each
    line with its control characters escaped (a text block's own lines stay lines)."""
    lines = [message.title]
    for block in message.blocks:
        if isinstance(block, Text):
            lines.extend(block.text.splitlines())
        elif isinstance(block, Fields):
            lines.append("  ·  ".join(f"{k}: {v}" for k, v in block.pairs))
        elif isinstance(block, Table):
            lines.extend(_table(block))
        elif isinstance(block, Code):
            lines.extend(f"    {line}" for line in block.text.splitlines())
        elif isinstance(block, Button):
            lines.append(f"[ {block.text} ]")
    return [safe(lines[0]), *(indent + safe(line) for line in lines[1:])]


class ConsoleNotifier:
    """Prints each incident's root message once and its thread replies beneath it."""

    def __init__(self, out: TextIO, *, channel: str = "#gpu-incidents") -> None:
        self.out = out
        self.channel = channel
        self._lock = asyncio.Lock()

    async def _print(self, lines: list[str]) -> None:
        async with self._lock:
            self.out.write("\n".join(safe(line) for line in lines) + "\n")
            self.out.flush()

    async def open_thread(self, *, incident: Incident) -> None:
        msg = incident_root(incident, state="open")
        body = render(msg)
        await self._print(["", f"┏━ {self.channel} ━ {body[0]}", *(f"┃{b}" for b in body[1:])])

    async def update_root(self, *, incident: Incident, state: str) -> None:
        await self._print([f"┃ (root message of {incident.id} edited: state → {state})"])

    async def post(self, *, incident_id: str | None, message: Message) -> None:
        body = render(message)
        where = f"[{incident_id}] " if incident_id else ""
        await self._print([f"┣━ {where}{body[0]}", *(f"┃{b}" for b in body[1:])])

    async def post_summary(self, *, key: str, message: Message) -> None:
        """A terminal cannot edit: each update of the summary is printed again."""
        body = render(message)
        await self._print([f"┣━ [{self.channel}] {body[0]}", *(f"┃{b}" for b in body[1:])])

    async def post_report(
        self, *, channel: str | None, message: Message, chart: bytes | None, filename: str
    ) -> None:
        body = render(message)
        attached = [f"┃   (chart {filename}: {len(chart)} bytes)"] if chart is not None else []
        await self._print(
            [
                "",
                f"┏━ {channel or self.channel} ━ {body[0]}",
                *(f"┃{b}" for b in body[1:]),
                *attached,
            ]
        )

    async def ask_approval(
        self, *, incident_id: str | None, request: ApprovalRequest, message: Message
    ) -> None:
        await self.post(incident_id=incident_id, message=message)
        await self._print(["┃    [ Approve ]  [ Deny ]"])

    async def approval_decided(
        self, *, incident_id: str | None, request: ApprovalRequest, message: Message
    ) -> None:
        await self.post(incident_id=incident_id, message=message)
