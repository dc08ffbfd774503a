"""Starlette app: POST /alertmanager, /slack/events (HTTP mode), GET /healthz, /readyz, /metrics."""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Awaitable, Callable

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from gpubot.domain.control.audit import AuditKeyError
from gpubot.domain.incidents.alerts import parse_webhook
from gpubot.domain.validation_errors import first_problem
from gpubot.engine.service import GpubotService
from gpubot.web.agent_auth import agent_event_refusal
from gpubot.web.agent_identity import AgentEventAuth
from gpubot.web.connections import mark_authenticated
from gpubot.web.limits import BodyLimit
from gpubot.web.metrics import WebMetrics
from gpubot.web.refusals import RefusalLog

log = logging.getLogger(__name__)


def _error(code: int, reason: str) -> JSONResponse:
    return JSONResponse({"error": reason}, status_code=code)


SlackHandler = Callable[[Request], Awaitable[Response]]


def create_app(
    service: GpubotService,
    *,
    webhook_token: str | None = None,
    max_body_bytes: int = 1 << 20,
    body_timeout_s: float = 10.0,
    slack_events: SlackHandler | None = None,
    agent_token: str | None = None,
    agent_auth: AgentEventAuth | None = None,
    metrics: WebMetrics | None = None,
) -> Starlette:
    """`slack_events` (Slack HTTP mode) verifies the signature before it parses anything.

    Every body is read by `BodyLimit` before any route sees it: at most `max_body_bytes`,
    within `body_timeout_s`. Every 4xx is logged with its reason (`RefusalLog`). `metrics`
    (wiring's, with the store and leader gauges) or a registry of the web counters alone.
    """
    metrics = metrics if metrics is not None else WebMetrics()
    agents = agent_auth if agent_auth is not None else AgentEventAuth(master=agent_token)
    expected = webhook_token.encode() if webhook_token else None

    def refused_early(path: str, status: int) -> None:
        if path == "/alertmanager":
            metrics.requests.labels(str(status)).inc()

    async def alertmanager(request: Request) -> Response:
        started = time.perf_counter()
        response = await _alertmanager(request)
        metrics.requests.labels(str(response.status_code)).inc()
        metrics.latency.observe(time.perf_counter() - started)
        return response

    async def _alertmanager(request: Request) -> Response:
        if expected is not None:
            scheme, _, token = request.headers.get("authorization", "").partition(" ")
            # The scheme name is case-insensitive (RFC 9110); the token is compared in
            # constant time.
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                token.strip().encode(), expected
            ):
                return _error(401, "missing or wrong bearer token")
        mark_authenticated(request.scope)  # its connection is not shed (web.max_connections)
        return await _accept(request)

    async def _accept(request: Request) -> Response:
        """Store an Alertmanager-shaped body durably, answer, then process it.

        An alert that cannot be used is rejected on its own (recorded, counted, named in
        the answer) and the others are stored: 2xx, since a retry would not cure it. Only a
        failure a retry can cure (the store down) gets 503.
        """
        try:
            webhook = parse_webhook(await request.body())
        except ValidationError as exc:
            return _error(400, first_problem(exc))
        try:
            summary = await service.receive(webhook)
        except Exception:  # the edge: Alertmanager retries on 5xx, so nothing is lost
            log.exception("could not store alerts")
            return _error(503, "alerts could not be stored; retry")
        for outcome in summary.outcomes:
            metrics.alerts.labels(outcome.kind.value).inc()
        answer: dict[str, object] = {"status": "stored", **summary.as_json()}
        if webhook.rejected:
            answer["rejected_alerts"] = [r.reason for r in webhook.rejected[:20]]
        return JSONResponse(answer)

    async def agent_events(request: Request) -> Response:
        """XID events from node agents, shaped as Alertmanager alerts: no scrape, no `for:`.
        `agent_auth` says which node a token speaks for (`agent_token` alone: hmac mode with
        that master secret)."""
        refusal = await agent_event_refusal(
            request,
            auth=agents,
            refused=lambda kind: metrics.agent_event_refusals.labels(kind).inc(),
        )
        if refusal is not None:
            return refusal
        mark_authenticated(request.scope)
        return await _accept(request)

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(request: Request) -> Response:
        if service.read.caches_filling():
            return PlainTextResponse("node caches filling after start", status_code=503)
        try:
            await service.read.store_answers()
            await service.read.audit_key_matches()
        except AuditKeyError as exc:  # every append would be refused: not ready to act
            return PlainTextResponse(f"audit key: {exc}", status_code=503)
        except Exception as exc:  # the probe reports, it does not crash
            return PlainTextResponse(f"store unavailable: {type(exc).__name__}", status_code=503)
        return PlainTextResponse("ready")

    async def prometheus(request: Request) -> Response:
        await metrics.refresh()  # the store's counts, read now: one read transaction
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    def refused(route: str, status: int) -> None:
        metrics.refusals.labels(route, str(status)).inc()

    slack_routes = [Route("/slack/events", slack_events, methods=["POST"])] if slack_events else []
    return Starlette(
        middleware=[
            Middleware(RefusalLog, counted=refused),
            Middleware(
                BodyLimit,
                max_bytes=max_body_bytes,
                read_timeout_s=body_timeout_s,
                refused=refused_early,
            ),
        ],
        routes=[
            *slack_routes,
            Route("/alertmanager", alertmanager, methods=["POST"]),
            Route("/agent/events", agent_events, methods=["POST"]),
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/metrics", prometheus),
        ],
    )
