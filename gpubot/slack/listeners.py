"""Bolt listeners: `/gpu` and the approval buttons. Each one acks first, then works."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Collection
from typing import Any, Literal

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltRequest, AsyncRespond
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from gpubot.domain import messages
from gpubot.domain.gpus.ledger_view import SHOWN_PER_GPU, history_message
from gpubot.domain.results import Message, Text
from gpubot.engine.service import GpubotService
from gpubot.errors import ApprovalError, GpubotError, NotFoundError, ObjectionClosed
from gpubot.knowledge.xid.catalog import CATALOG_URL, explain
from gpubot.slack import blocks, mrkdwn, replies
from gpubot.slack.blocks import APPROVE_ACTION, DENY_ACTION, OBJECT_ACTION
from gpubot.slack.commands import (
    USAGE,
    Audit,
    Command,
    Help,
    History,
    Idle,
    Incidents,
    PlanCmd,
    PolicyCmd,
    RunCmd,
    Show,
    Status,
    UsageError,
    Xid,
    parse,
)

log = logging.getLogger(__name__)
_BUTTONS = re.compile(f"^({APPROVE_ACTION}|{DENY_ACTION})$")
FAILED = "That failed: gpubot or Slack's Web API did not answer. Try again in a minute."


class UserGroups:
    """Which of the configured Slack user groups a user is in (usergroups.users.list, TTL)."""

    def __init__(
        self,
        client: AsyncWebClient,
        usergroups: Collection[str],
        *,
        ttl: float = 300.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.usergroups = sorted(set(usergroups))
        self.ttl = ttl
        self._monotonic = monotonic
        self._members: dict[str, tuple[float, frozenset[str]]] = {}

    async def of(self, user: str) -> list[str]:
        return [g for g in self.usergroups if user in await self._members_of(g)]

    async def is_member(self, user: str, usergroup: str) -> bool:
        """Any user group, configured or not (an owner's group named by a pod annotation)."""
        return user in await self._members_of(usergroup)

    async def _members_of(self, usergroup: str) -> frozenset[str]:
        cached = self._members.get(usergroup)
        now = self._monotonic()
        if cached is not None and now - cached[0] < self.ttl:
            return cached[1]
        try:
            reply = await self.client.usergroups_users_list(usergroup=usergroup)
            members = frozenset(str(u) for u in reply.get("users") or [])
        except Exception:  # Slack unreachable: the last known members, else nobody
            log.exception("usergroups.users.list %s failed", usergroup)
            return cached[1] if cached else frozenset()
        self._members[usergroup] = (now, members)
        return members


def _reply(message: Message) -> dict[str, Any]:
    return {
        "response_type": "ephemeral",
        "text": blocks.fallback_text(message),
        "blocks": blocks.message_blocks(message),
    }


class GpuCommands:
    """Runs one parsed `/gpu` command and returns the message to show."""

    def __init__(
        self,
        service: GpubotService,
        *,
        default_cluster: str,
        idle: Callable[[str | None], Awaitable[Message]] | None = None,
    ) -> None:
        self.service = service
        self.default_cluster = default_cluster
        self.idle = idle  # the idle-GPU report for a namespace (or all), as a message

    def parse(self, text: str) -> Command:
        read = self.service.read
        return parse(
            text,
            clusters=read.clusters(),
            runbooks=read.runbooks(),
            default_cluster=self.default_cluster,
        )

    async def answer(self, command: Command, *, user: str) -> Message:
        read = self.service.read
        if isinstance(command, Help):
            return Message("gpubot", (Text(USAGE),))
        if isinstance(command, Status):
            return await self._status(command)
        if isinstance(command, Incidents):
            found = await read.incidents(open_only=command.which == "open", limit=20)
            return replies.incident_list(found, command.which)
        if isinstance(command, Show):
            return replies.incident_detail(*await read.incident_with_runs(command.incident))
        if isinstance(command, Audit):
            return messages.audit_summary(await read.incident_events(command.incident))
        if isinstance(command, PlanCmd):
            plan = await self.service.plan(
                runbook=command.runbook, args=command.args, cluster=command.cluster
            )
            return messages.plan_message(plan)
        if isinstance(command, RunCmd):
            plan, run = await self.service.start_command_run(
                runbook=command.runbook,
                args=command.args,
                requested_by=user,
                cluster=command.cluster,
                dry_run=command.dry_run,
            )
            started = messages.plan_message(plan)
            what = "dry run" if run is not None and run.dry_run else "run"
            title = f"Started {what} {run.id}" if run else "Not started: already running"
            return Message(f"{title}: {started.title}", started.blocks)
        if isinstance(command, Xid):
            return replies.xid_reply(command.code, explain(command.code), CATALOG_URL)
        if isinstance(command, Idle):
            if self.idle is None:
                return messages.text("Idle-GPU reports are not configured.")
            return await self.idle(command.namespace)
        if isinstance(command, History):
            events = await read.gpu_history(uuid=command.uuid, node=command.node)
            target = command.uuid or command.node or ""
            return history_message(target, events, limit=SHOWN_PER_GPU)
        if isinstance(command, PolicyCmd):
            choice = await read.node_pool(cluster=command.cluster, node=command.node)
            return replies.node_policy(
                command.cluster,
                command.node,
                choice,
                digest=read.policy_digest(),
                policy=read.policy(),
            )
        raise AssertionError(f"unhandled command {command!r}")

    async def _status(self, command: Status) -> Message:
        read = self.service.read
        if command.node is not None:
            node, gpus = await read.node_gpus(cluster=command.cluster, node=command.node)
            return replies.node_status(command.cluster, node, gpus)
        return replies.fleet_status(command.cluster, await read.fleet_gpus(cluster=command.cluster))


def register(app: AsyncApp, *, commands: GpuCommands, groups: UserGroups) -> None:
    """Attach the `/gpu` command and the approval buttons to a bolt app."""
    service = commands.service

    @app.command("/gpu")
    async def gpu(ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        user = str(command.get("user_id", ""))
        try:
            parsed = commands.parse(str(command.get("text", "")))
        except UsageError as exc:
            text = mrkdwn.escape(f"{exc}\n\n{USAGE}")  # it may quote what was typed
            await _respond(respond, response_type="ephemeral", text=text)
            return
        try:
            message = await commands.answer(parsed, user=user)
        except NotFoundError as exc:
            message = messages.text(f"Not found: {exc}")
        except GpubotError as exc:
            message = messages.text(f"Refused: {exc}")
        except Exception:  # the listener's edge: log, tell the user, keep serving
            log.exception("/gpu %s failed", type(parsed).__name__)
            message = messages.text("That failed inside gpubot; the error is in its log.")
        await _respond(respond, **_reply(message))

    @app.error
    async def failed(
        error: Exception, request: AsyncBoltRequest, response: BoltResponse | None
    ) -> BoltResponse | None:
        """Every listener's and middleware's unexpected error, once: one log line, and the
        user is told in an ephemeral message where Slack allows it; never a 500."""
        expected = isinstance(error, OSError | TimeoutError | SlackClientError)
        what = request.body.get("command") or request.body.get("type") or "request"
        log.error("slack: %s failed: %s", what, _one_line(error), exc_info=not expected)
        if response is not None and request.body.get("command"):
            # Not answered yet, and a slash command shows its answer's body: say it there.
            return BoltResponse(
                status=200,
                body=json.dumps({"response_type": "ephemeral", "text": FAILED}),
                headers={"content-type": "application/json"},
            )
        respond = request.context.respond  # a click (Slack ignores its answer's body)
        if respond is not None:
            await _respond(respond, response_type="ephemeral", replace_original=False, text=FAILED)
        # Not answered yet: 200, so Slack shows no error of its own beside ours.
        return BoltResponse(status=200, body="") if response is not None else None

    @app.action(_BUTTONS)
    async def button(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        action = body["actions"][0]
        user = str(body["user"]["id"])
        decision: Literal["approve", "deny"] = (
            "approve" if action["action_id"] == APPROVE_ACTION else "deny"
        )
        try:
            await service.vote(
                approval_id=str(action.get("value", "")),
                user=user,
                decision=decision,
                user_groups=await groups.of(user),
            )
        except ApprovalError as exc:  # gpubot's own reason: its mentions are built from ids
            reason = str(exc)
            await _tell(client, body, user=user, text=reason, mentions=mrkdwn.mentions_in(reason))

    @app.action(OBJECT_ACTION)
    async def keep(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        """The "Object — keep it" button: the owner or an approver keeps the workload."""
        await ack()
        user = str(body["user"]["id"])
        channel = _channel(body)
        try:
            kept = await service.object(
                run_id=str(body["actions"][0].get("value", "")),
                user=user,
                member_of=lambda usergroup: groups.is_member(user, usergroup),
            )
        except ApprovalError as exc:  # gpubot's own reason: its mentions are built from ids
            reason, live = str(exc), mrkdwn.mentions_in(str(exc))
            if isinstance(exc, ObjectionClosed):
                await _close_notice(client, body, channel, mrkdwn.render(reason, live=live))
            await _tell(client, body, user=user, text=reason, mentions=live)
            return
        at = service.read.now().strftime("%Y-%m-%d %H:%M UTC")
        who = mrkdwn.user_mention(user) or mrkdwn.escape(user)  # the clicker, from Slack
        workload = mrkdwn.escape(kept.workload)
        note = f"Kept by {who} at {at}: {workload} stays; nothing is reclaimed."
        await _close_notice(client, body, channel, note)
        text = f"Objection recorded: {kept.workload} is kept. The run stops within a minute."
        await _tell(client, body, user=user, text=text)


async def _respond(respond: AsyncRespond, **reply: Any) -> None:
    """Answer through the command's response_url; without one (or with Slack unreachable)
    nobody can be told, so say so in one log line instead of raising into bolt."""
    try:
        await respond(**reply)
    except Exception as exc:  # the listener's edge
        log.warning("/gpu: could not send the answer: %s", exc)


async def _tell(
    client: AsyncWebClient,
    body: dict[str, Any],
    *,
    user: str,
    text: str,
    mentions: tuple[str, ...] = (),
) -> None:
    """An ephemeral answer to whoever clicked; `text` is escaped except `mentions`.
    When the Web API fails, the error handler tells them through the response_url."""
    await client.chat_postEphemeral(
        channel=_channel(body),
        user=user,
        text=mrkdwn.render(text, live=mentions),
        blocks=blocks.ephemeral(text, mentions=mentions),
    )


def _one_line(error: BaseException) -> str:
    first = (str(error).splitlines() or [""])[0][:300]
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def _channel(body: dict[str, Any]) -> str:
    return str(
        (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id", "")
    )


async def _close_notice(
    client: AsyncWebClient, body: dict[str, Any], channel: str, note: str
) -> None:
    """Edit the notice: its button gives way to who kept it (or why it is closed);
    `note` is rendered mrkdwn."""
    message = body.get("message") or {}
    ts = message.get("ts") or (body.get("container") or {}).get("message_ts")
    if not ts:
        return
    try:
        await client.chat_update(
            channel=channel,
            ts=str(ts),
            # The notice's text as Slack holds it (escaped when posted), then the note.
            text=f"{message.get('text', '')} {note}".strip(),
            blocks=blocks.without_button(list(message.get("blocks") or []), OBJECT_ACTION, note),
        )
    except Exception:  # the edit is cosmetic: the objection is already in the audit trail
        log.exception("could not edit the reclamation notice %s", ts)
