"""Every 4xx the web layer answers, logged once with its reason and counted by route.

An ASGI middleware outside every other: it sees the answers of the routes (a bad bearer
token, a malformed webhook), of the body limits (413, 408), of Slack's signature check and of
the agent-token check alike, and reads the reason from the `{"error": …}` body they send.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)
ROUTES = ("/alertmanager", "/agent/events", "/slack/events", "/healthz", "/readyz", "/metrics")
_BODY_BYTES = 2048  # of a refusal's body kept to read its reason

OnRefusal = Callable[[str, int], None]  # (route, status): the metrics side


def route_of(path: str) -> str:
    """The route a path names, or "other": a label never carries what a client sent."""
    return path if path in ROUTES else "other"


def reason_of(body: bytes) -> str:
    """The `error` of a JSON answer, else the text itself (Starlette's 404/405)."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace").strip() or "-"
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        return str(data["error"])
    return "-"


class RefusalLog:
    """Logs (`event=http.refused`) and counts each 4xx answer, with its reason."""

    def __init__(self, app: ASGIApp, *, counted: OnRefusal | None = None) -> None:
        self.app = app
        self.counted = counted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 0
        body = bytearray()

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            elif message["type"] == "http.response.body" and 400 <= status < 500:
                if len(body) < _BODY_BYTES:
                    body.extend(message.get("body", b"")[: _BODY_BYTES - len(body)])
                if not message.get("more_body", False):
                    self._refused(scope, status, bytes(body))
            await send(message)

        await self.app(scope, receive, watched)

    def _refused(self, scope: Scope, status: int, body: bytes) -> None:
        route = route_of(str(scope.get("path", "")))
        method = str(scope.get("method", "-"))[:16]
        reason = reason_of(body)
        if self.counted is not None:
            self.counted(route, status)
        log.warning(
            "refused %s %s: %d %s",
            method,
            route,
            status,
            reason,
            extra={"event": "http.refused", "path": route, "status": status, "reason": reason},
        )
