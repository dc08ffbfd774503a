"""Every request the agent answers, counted by route and outcome; each refusal logged once.

An ASGI middleware around the agent's routes: it reads the status and, for an answer of
400 or more, the `{"error": …, "kind": …}` body the agent sends (Starlette's own 404 and 405
are text). The route is a template matched from a fixed list, never the path a client sent;
the reason is cut and escaped, so a request cannot forge a log line. Headers are never read:
no token reaches the log. An action that logs its own outcome (agent.observed) calls
`logged_elsewhere()`, and the request adds no second line for it.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from typing import Any

from gpubot.agent.metrics import HTTP_KINDS, KINDS, AgentMetrics

log = logging.getLogger(__name__)
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_INDEX = "[0-9]+"  # Starlette's {index:int}
ROUTES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern.replace("{index}", _INDEX)), template)
    for pattern, template in (
        (r"/healthz", "/healthz"),
        (r"/readyz", "/readyz"),
        (r"/metrics", "/metrics"),
        (r"/v1/gpus", "/v1/gpus"),
        (r"/v1/gpus/{index}/processes", "/v1/gpus/{index}/processes"),
        (r"/v1/gpus/{index}/power-limit", "/v1/gpus/{index}/power-limit"),
        (r"/v1/gpus/{index}/power-limit/restore", "/v1/gpus/{index}/power-limit/restore"),
        (r"/v1/gpus/{index}/reset", "/v1/gpus/{index}/reset"),
        (r"/v1/diag", "/v1/diag"),
    )
)
_BODY_BYTES = 2048  # of an error's body kept to read its reason
_MAX_REASON = 300
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_METHOD = re.compile(r"[A-Z]{1,16}")
_STARLETTE_KINDS = {404: "not_found", 405: "method_not_allowed"}
# Per request: set when the request's outcome is already in the log. A list, so that the
# thread an action runs in (asyncio.to_thread copies the context) marks the same one.
_logged: ContextVar[list[bool] | None] = ContextVar("agent_request_logged", default=None)


def logged_elsewhere() -> None:
    """The current request's outcome has its own line: no `agent.refused` line for it."""
    marks = _logged.get()
    if marks is not None:
        marks.append(True)


def route_of(path: str) -> str:
    """The route template a path matches, or `other`."""
    for pattern, template in ROUTES:
        if pattern.fullmatch(path):
            return template
    return "other"


def printable(text: str) -> str:
    r"""One line of at most 300 characters, control characters as escapes (`\n`, `\x1b`)."""
    text = _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)
    return text if len(text) <= _MAX_REASON else text[:_MAX_REASON] + "…"


def refusal_of(status: int, body: bytes) -> tuple[str, str]:
    """(kind, reason) of an error answer: the agent's JSON error, else Starlette's text."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        kind = data.get("kind")
        return (kind if isinstance(kind, str) else "-"), data["error"]
    text = body.decode("utf-8", "replace").strip()
    return _STARLETTE_KINDS.get(status, "-"), text or "-"


def outcome_of(status: int, kind: str) -> str:
    """A bounded label: `ok`, the refusal's kind when it is a known one, else the class."""
    if 200 <= status < 300:
        return "ok"
    if kind in KINDS or kind in HTTP_KINDS:
        return kind
    return f"{status // 100}xx" if 100 <= status < 600 else "other"


class RequestLog:
    """Counts each answer in `metrics`; logs each one of 400 or more (`event=agent.refused`)."""

    def __init__(self, app: ASGIApp, *, metrics: AgentMetrics | None = None) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 0
        body = bytearray()
        done = False
        marks: list[bool] = []
        _logged.set(marks)

        async def watched(message: Message) -> None:
            nonlocal status, done
            if message["type"] == "http.response.start":
                status = int(message["status"])
            elif message["type"] == "http.response.body" and not done:
                if status >= 400 and len(body) < _BODY_BYTES:
                    body.extend(message.get("body", b"")[: _BODY_BYTES - len(body)])
                if not message.get("more_body", False):
                    done = True
                    self._answered(scope, status, bytes(body), logged=bool(marks))
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except BaseException:
            if not done:  # Starlette's outer layer answers 500 for it
                self._answered(scope, 500, b'{"error": "internal error", "kind": "failed"}')
            raise

    def _answered(self, scope: Scope, status: int, body: bytes, *, logged: bool = False) -> None:
        route = route_of(str(scope.get("path", "")))
        kind, reason = refusal_of(status, body) if status >= 400 else ("-", "")
        if self.metrics is not None:
            self.metrics.request(route=route, outcome=outcome_of(status, kind))
        if status < 400 or logged or route == "/readyz":
            return  # /readyz: Readiness logs when the verdict changes, not every probe
        method = str(scope.get("method", ""))
        method = method if _METHOD.fullmatch(method) else "-"
        reason, kind = printable(reason), printable(kind)
        log.log(
            logging.WARNING if status < 500 else logging.ERROR,
            "refused %s %s: %d %s (%s)",
            method,
            route,
            status,
            reason,
            kind,
            extra={
                "event": "agent.refused",
                "path": route,
                "status": status,
                "result": kind,
                "reason": reason,
            },
        )
