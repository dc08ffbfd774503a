"""RecordingNotifier: a ChatNotifier that keeps every call, for tests and scenario checks."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpubot.domain.control.approvals import ApprovalRequest
from gpubot.domain.incidents.correlation import Incident
from gpubot.domain.results import Message


@dataclass
class Posted:
    # open_thread | update_root | post | summary | ask_approval | approval_decided | report
    kind: str
    incident_id: str | None
    text: str
    approval_id: str | None = None  # a summary's key for kind "summary"


@dataclass
class RecordingNotifier:
    calls: list[Posted] = field(default_factory=list)
    charts: list[tuple[str, bytes | None]] = field(default_factory=list)

    async def open_thread(self, *, incident: Incident) -> None:
        self.calls.append(Posted("open_thread", incident.id, incident.summary))

    async def update_root(self, *, incident: Incident, state: str) -> None:
        self.calls.append(Posted("update_root", incident.id, state))

    async def post(self, *, incident_id: str | None, message: Message) -> None:
        self.calls.append(Posted("post", incident_id, message.plain()))

    async def post_summary(self, *, key: str, message: Message) -> None:
        self.calls.append(Posted("summary", None, message.plain(), key))

    async def ask_approval(
        self, *, incident_id: str | None, request: ApprovalRequest, message: Message
    ) -> None:
        self.calls.append(Posted("ask_approval", incident_id, message.plain(), request.id))

    async def approval_decided(
        self, *, incident_id: str | None, request: ApprovalRequest, message: Message
    ) -> None:
        self.calls.append(Posted("approval_decided", incident_id, message.plain(), request.id))

    async def post_report(
        self, *, channel: str | None, message: Message, chart: bytes | None, filename: str
    ) -> None:
        self.calls.append(Posted("report", None, message.plain()))
        self.charts.append((filename, chart))

    def of(self, kind: str) -> list[Posted]:
        return [c for c in self.calls if c.kind == kind]

    def text(self) -> str:
        return "\n".join(c.text for c in self.calls)
