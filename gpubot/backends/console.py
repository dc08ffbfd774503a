"""ChatNotifier for the terminal: an incident thread as it would read in Slack."""

from __future__ import annotations

import asyncio
from typing import TextIO

from gpubot.domain.approvals import ApprovalRequest
from gpubot.domain.incidents import Incident
from gpubot.domain.results import Button, Code, Fields, Message, Table, Text
from gpubot.engine.messages import incident_root


def render(message: Message, *, indent: str = "   ") -> list[str]:
    """Terminal lines for a message: fields as `key: value`, tables as aligned columns."""
    lines = [message.title]
    for block in message.blocks:
        if isinstance(block, Text):
            lines.extend(block.text.splitlines())
        elif isinstance(block, Fields):
            lines.append("  ·  ".join(f"{k}: {v}" for k, v in block.pairs))
        elif isinstance(block, Table):
            rows = [block.headers, *block.rows]
            widths = [min(60, max(len(r[i]) for r in rows)) for i in range(len(block.headers))]
            for n, row in enumerate(rows):
                cells = [cell[:60].ljust(w) for cell, w in zip(row, widths, strict=True)]
                lines.append("  ".join(cells).rstrip())
                if n == 0:
                    lines.append("  ".join("-" * w for w in widths))
        elif isinstance(block, Code):
            lines.extend(f"    {line}" for line in block.text.splitlines())
        elif isinstance(block, Button):
            lines.append(f"[ {block.text} ]")
    return [lines[0], *(indent + line for line in lines[1:])]


class ConsoleNotifier:
    """Prints each incident's root message once and its thread replies beneath it."""

    def __init__(self, out: TextIO, *, channel: str = "#gpu-incidents") -> None:
        self.out = out
        self.channel = channel
        self._lock = asyncio.Lock()

    async def _print(self, lines: list[str]) -> None:
        async with self._lock:
            self.out.write("\n".join(lines) + "\n")
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
