"""The Slack side assembled: Web API client, outbox, notifier, bolt AsyncApp, HTTP and socket."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gpubot.config import Settings
from gpubot.domain.results import Message
from gpubot.engine.service import GpubotService
from gpubot.errors import ConfigError
from gpubot.slack.event_body import read_payload
from gpubot.slack.listeners import GpuCommands, UserGroups, register
from gpubot.slack.notifier import NotifierStore, Route, SlackNotifier
from gpubot.slack.outbox import SlackOutbox
from gpubot.slack.verify import MemorySeenRequests, Refused, SeenRequests, SlackVerifier
from gpubot.slack.workspace import OnForeign, Workspace, foreign, guard, refusal, refused

log = logging.getLogger(__name__)


def web_client(settings: Settings) -> AsyncWebClient:
    if settings.slack_bot_token is None:
        raise ConfigError("SLACK_BOT_TOKEN is not set (needed when slack.mode is not off)")
    base = settings.slack.api_url
    return AsyncWebClient(
        token=settings.slack_bot_token.get_secret_value(),
        base_url=base if base.endswith("/") else base + "/",
    )


def make_notifier(
    settings: Settings, client: AsyncWebClient, store: NotifierStore
) -> SlackNotifier:
    s = settings.slack
    outbox = SlackOutbox(client, per_second=s.rate_per_second)
    routes = [Route(channel=r.channel, cluster=r.cluster, severity=r.severity) for r in s.routes]
    return SlackNotifier(outbox, store, channel=s.channel, routes=routes)


@dataclass
class SlackParts:
    """The bolt app and how it is reached: HTTP (`/slack/events`) or Socket Mode."""

    app: AsyncApp
    notifier: SlackNotifier
    settings: Settings
    seen: SeenRequests = field(default_factory=MemorySeenRequests)
    now: Callable[[], float] = time.time  # epoch seconds, for the signature's 5-minute window
    on_foreign: OnForeign | None = None  # counts requests refused as another workspace's
    _socket: AsyncSocketModeHandler | None = None

    def __post_init__(self) -> None:
        self._http = AsyncSlackRequestHandler(self.app)
        secret = self.settings.slack_signing_secret
        self._verifier = (
            SlackVerifier(secret.get_secret_value(), now=self.now) if secret is not None else None
        )

    async def handle_http(self, request: Request) -> Response:
        """POST /slack/events: signature, window and replay first, on the raw bytes; only
        then is the body parsed (unreadable ones get a 400), its workspace, org and app
        checked (gpubot.slack.workspace), and handed to bolt."""
        if self._verifier is None:
            return _error(401, "invalid request: no signing secret is configured")
        body = await request.body()  # the web layer caps its size and its read time
        try:
            signed = self._verifier.check(body, request.headers)
        except Refused as exc:
            return _error(401, f"invalid request: {exc}")
        # Signed: the server no longer sheds this connection at its bound (gpubot.web's
        # connections offer this call as an ASGI scope extension).
        mark = request.scope.get("extensions", {}).get("gpubot.authenticated")
        if callable(mark):
            mark()
        try:
            first = await self.seen.first_sight(
                signed.digest, expires_at=signed.expires_at, now=signed.now
            )
        except Exception as exc:  # the edge: the store is down; Slack shows the user an error
            log.error("slack: cannot record a request, refused: %s", type(exc).__name__)
            return _error(503, "cannot record the request; retry")
        if not first:
            # A replay, or Slack retrying (X-Slack-Retry-Num) a request already accepted
            # here or by another replica: answered 200 so Slack stops, and nothing is done.
            retry = request.headers.get("x-slack-retry-num")
            log.warning("slack: a request already accepted came again (retry %s)", retry or "-")
            return Response(status_code=200)
        payload = read_payload(body, request.headers)
        if isinstance(payload, str):
            return _error(400, payload)
        if found := foreign(payload, Workspace.of(self.settings.slack)):
            refused(found, self.on_foreign)
            answer = refusal(payload, found)
            return Response(answer.body, status_code=answer.status, media_type="application/json")
        response: Response = await self._http.handle(request)
        return response

    @property
    def socket_mode(self) -> bool:
        return self.settings.slack.mode == "socket" and self.settings.slack_app_token is not None

    async def start(self) -> None:
        if self.settings.slack.mode == "socket" and self.settings.slack.team_id is None:
            log.warning(
                "slack: slack.team_id is not set, so a request from any workspace where this "
                "app is installed is answered; set slack.team_id (and slack.enterprise_id)"
            )
        if self.settings.slack.mode == "socket" and self.settings.slack_app_token is None:
            log.warning("slack: SLACK_APP_TOKEN is not set, so /gpu and the buttons are off")
        if not self.socket_mode:
            return
        assert self.settings.slack_app_token is not None
        self._socket = AsyncSocketModeHandler(
            self.app, self.settings.slack_app_token.get_secret_value()
        )
        try:
            await self._socket.connect_async()  # type: ignore[no-untyped-call]
        except Exception as exc:  # bad token, no route to Slack: one line, not a traceback
            raise ConfigError(f"slack: Socket Mode could not connect: {exc}") from exc
        log.info("slack: connected in Socket Mode")

    async def stop(self) -> None:
        if self._socket is not None:
            await self._socket.close_async()  # type: ignore[no-untyped-call]
            self._socket = None

    async def aclose(self, *, grace: float = 10.0) -> None:
        """Send what is still queued (for up to `grace` seconds), then stop the outbox."""
        await self.stop()
        try:
            outbox = self.notifier.outbox
            await outbox.clock.wait_for(outbox.flush(), grace)
        except TimeoutError:  # Slack unreachable at shutdown; the store keeps the record
            log.warning("slack: %d messages unsent at shutdown", self.notifier.outbox.pending)
        await self.notifier.outbox.aclose()


def _error(status: int, reason: str) -> Response:
    return JSONResponse({"error": reason}, status_code=status)


def make_slack_app(
    settings: Settings,
    *,
    service: GpubotService,
    notifier: SlackNotifier,
    usergroups: Mapping[str, frozenset[str]],
    idle: Callable[[str | None], Awaitable[Message]] | None = None,
    seen: SeenRequests | None = None,
    now: Callable[[], float] = time.time,
    on_foreign: OnForeign | None = None,
) -> SlackParts:
    """Bolt AsyncApp with the `/gpu` command and approval buttons.

    `seen` records accepted requests (the store, so replicas share it; in memory when not
    given); `now` is the clock for the signature's window; `on_foreign` counts requests
    refused because they name another workspace, org or app.
    """
    s = settings.slack
    if s.mode == "http" and settings.slack_signing_secret is None:
        raise ConfigError("SLACK_SIGNING_SECRET is not set (needed for slack.mode: http)")
    if s.mode == "http" and (s.team_id is None or s.app_id is None):
        # A public Request URL takes requests from any workspace the app is installed in.
        raise ConfigError(
            "slack.team_id and slack.app_id must be set for slack.mode: http "
            "(the workspace and app whose requests gpubot answers)"
        )
    client = notifier.outbox.client
    app = AsyncApp(
        client=client,
        # SlackParts.handle_http verifies every HTTP request before bolt sees its body (and
        # Socket Mode needs no signature), so bolt's own check, after its parse, is off.
        signing_secret=None,
        request_verification_enabled=False,
        process_before_response=False,
    )
    groups = UserGroups(
        client,
        [g for members in usergroups.values() for g in members],
        ttl=settings.slack.usergroup_cache_seconds,
    )
    default_cluster = settings.fallback_cluster or settings.clusters[0].name
    commands = GpuCommands(service, default_cluster=default_cluster, idle=idle)
    guard(app, Workspace.of(s), on_foreign)  # before every listener, in both modes
    register(app, commands=commands, groups=groups)
    return SlackParts(
        app=app,
        notifier=notifier,
        settings=settings,
        seen=seen if seen is not None else MemorySeenRequests(),
        now=now,
        on_foreign=on_foreign,
    )
