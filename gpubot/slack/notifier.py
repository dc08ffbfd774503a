"""SlackNotifier: one root message per incident, edited in place, and a thread of replies."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from gpubot.domain.control.approvals import ApprovalRequest, ApprovalStatus
from gpubot.domain.incidents.correlation import Incident
from gpubot.domain.results import Message
from gpubot.slack import blocks, mrkdwn
from gpubot.slack.outbox import Payload, Ref, SlackOutbox, Upload

log = logging.getLogger(__name__)
# A step's state and its progress: consecutive ones for the same step become one message,
# edited as the step goes on.
_STEP_KINDS = ("step", "progress")
_MAX_MERGED_BLOCKS = 12


class ChatRefs(Protocol):
    async def get_chat_ref(self, key: str) -> tuple[str, str] | None: ...

    async def put_chat_ref(self, key: str, *, channel: str, ts: str) -> None: ...


class NotifierStore(ChatRefs, Protocol):
    async def get_incident(self, incident_id: str) -> Incident: ...


@dataclass(frozen=True)
class Route:
    channel: str
    cluster: str | None = None
    severity: str | None = None

    def matches(self, incident: Incident) -> bool:
        return (self.cluster is None or self.cluster == incident.cluster) and (
            self.severity is None or self.severity == incident.severity
        )


def route(incident: Incident, routes: Sequence[Route], default: str) -> str:
    return next((r.channel for r in routes if r.matches(incident)), default)


def merge_progress(old: Payload, new: Payload) -> Payload:
    """One step's messages as one: the latest title (its state), the bodies in order."""
    a, b = old.source, new.source
    if not isinstance(a, Message) or not isinstance(b, Message):
        return new
    title = b.title if b.kind == "step" else a.title  # the latest state names the step's
    mentions = tuple(dict.fromkeys((*a.mentions, *b.mentions)))
    merged = Message(
        title,
        (*a.blocks, *b.blocks)[-_MAX_MERGED_BLOCKS:],
        mentions,
        kind="step" if "step" in (a.kind, b.kind) else b.kind,
        step_key=b.step_key,
    )
    return _payload(merged)


def _payload(message: Message) -> Payload:
    return Payload(blocks.fallback_text(message), blocks.message_blocks(message), message)


class SlackNotifier:
    """ChatNotifier for Slack; every message goes through the rate-limited outbox."""

    def __init__(
        self,
        outbox: SlackOutbox,
        store: NotifierStore,
        *,
        channel: str,
        routes: Sequence[Route] = (),
    ) -> None:
        self.outbox = outbox
        self.store = store
        self.channel = channel
        self.routes = tuple(routes)
        self._threads: dict[str, tuple[str, Ref]] = {}
        self._approvals: dict[str, tuple[str, Ref, Message]] = {}
        self._summaries: dict[str, Ref] = {}

    # -- the root -------------------------------------------------------------------------

    async def open_thread(self, *, incident: Incident) -> None:
        if incident.id in self._threads or await self.store.get_chat_ref(self._key(incident.id)):
            return  # already posted (recovery after a restart): never a second root
        self._open(incident, "open")

    def _open(self, incident: Incident, state: str) -> tuple[str, Ref]:
        channel = route(incident, self.routes, self.channel)
        text, body = blocks.incident_root(incident, state=state)

        async def remember(channel_id: str, ts: str) -> None:
            await self.store.put_chat_ref(self._key(incident.id), channel=channel_id, ts=ts)

        ref = self.outbox.post(channel, Payload(text, body), on_sent=remember)
        self._threads[incident.id] = (channel, ref)
        return channel, ref

    async def update_root(self, *, incident: Incident, state: str) -> None:
        found = await self._thread(incident.id)
        if found is None:
            self._open(incident, state)
            return
        channel, ref = found
        text, body = blocks.incident_root(incident, state=state)
        self.outbox.edit(channel, ref, Payload(text, body))

    async def _root_state(self, incident_id: str | None, state: str) -> None:
        if incident_id is None:
            return
        incident = await self.store.get_incident(incident_id)
        if incident.is_open:
            await self.update_root(incident=incident, state=state)

    # -- the thread -----------------------------------------------------------------------

    async def post(self, *, incident_id: str | None, message: Message) -> None:
        channel, thread = await self._where(incident_id)
        step = message.kind in _STEP_KINDS and thread is not None
        key = message.step_key if step else None
        self.outbox.post(
            channel,
            _payload(message),
            thread=thread,
            merge_key=key,
            combine=merge_progress if key else None,
        )

    async def post_summary(self, *, key: str, message: Message) -> None:
        """One channel message per key, edited in place; the outbox keeps only the latest of
        queued edits, so a storm of updates costs a few Slack calls, not one each."""
        ref = self._summaries.get(key)
        if ref is None and (stored := await self.store.get_chat_ref(f"summary:{key}")):
            ref = self._summaries[key] = Ref(*stored)
        if ref is not None:
            self.outbox.edit(self.channel, ref, _payload(message))
            return

        async def remember(channel_id: str, ts: str) -> None:
            await self.store.put_chat_ref(f"summary:{key}", channel=channel_id, ts=ts)

        self._summaries[key] = self.outbox.post(self.channel, _payload(message), on_sent=remember)

    async def ask_approval(
        self, *, incident_id: str | None, request: ApprovalRequest, message: Message
    ) -> None:
        channel, thread = await self._where(incident_id)
        text = blocks.fallback_text(message)

        async def remember(channel_id: str, ts: str) -> None:
            await self.store.put_chat_ref(f"approval:{request.id}", channel=channel_id, ts=ts)

        ref = self.outbox.post(
            channel,
            Payload(text, blocks.approval_request(message, request), message),
            thread=thread,
            on_sent=remember,
        )
        self._approvals[request.id] = (channel, ref, message)
        await self._root_state(incident_id, "waiting for approval")

    async def approval_decided(
        self, *, incident_id: str | None, request: ApprovalRequest, message: Message
    ) -> None:
        found = self._approvals.get(request.id)
        original: Message | None = None
        if found is not None:
            channel, ref, original = found
        elif (stored := await self.store.get_chat_ref(f"approval:{request.id}")) is not None:
            channel, ref = stored[0], Ref(*stored)
        else:
            # The voters (Slack user ids from signed clicks) may be mentioned; nobody else.
            voters = tuple(m for v in request.votes if (m := mrkdwn.user_mention(v.user)))
            await self.post(incident_id=incident_id, message=replace(message, mentions=voters))
            return
        note = " ".join([message.title, *(b.text for b in message.blocks if hasattr(b, "text"))])
        text, body = blocks.approval_decided(original, request, note)
        self.outbox.edit(channel, ref, Payload(text, body))
        if request.status is ApprovalStatus.APPROVED:
            await self._root_state(incident_id, "acting")
        elif request.status is ApprovalStatus.DENIED:
            await self._root_state(incident_id, "denied")

    # -- reports --------------------------------------------------------------------------

    async def post_report(
        self, *, channel: str | None, message: Message, chart: bytes | None, filename: str
    ) -> None:
        """The report as a top-level message; its chart uploaded in the message's thread."""
        where = channel or self.channel
        ref = self.outbox.post(where, _payload(message))
        if chart is not None:
            self.outbox.upload(where, Upload(chart, filename, message.title), thread=ref)

    # -- lookups --------------------------------------------------------------------------

    @staticmethod
    def _key(incident_id: str) -> str:
        return f"thread:{incident_id}"

    async def _thread(self, incident_id: str) -> tuple[str, Ref] | None:
        if incident_id in self._threads:
            return self._threads[incident_id]
        stored = await self.store.get_chat_ref(self._key(incident_id))
        if stored is None:
            return None
        found = self._threads[incident_id] = (stored[0], Ref(*stored))
        return found

    async def _where(self, incident_id: str | None) -> tuple[str, Ref | None]:
        """The incident's thread; a run without an incident posts in the default channel."""
        if incident_id is None:
            return self.channel, None
        found = await self._thread(incident_id)
        if found is None:
            incident = await self.store.get_incident(incident_id)
            found = self._open(incident, "open")
        return found
