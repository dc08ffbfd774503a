"""The server's connections: a deadline for each request's head and body, one framing of
each body, and a bound on how many are open that an attacker's sockets cannot spend.

`connection_protocol(limits)` is uvicorn's h11 protocol with:

- a deadline for each request's line and headers (`header_timeout_s`, from the connection's
  start or the last response) and then for its body (`body_timeout_s` and a second, so that
  `BodyLimit`'s 408 comes first where a handler reads): a connection that has not sent its
  request by then is closed, whatever the handler does. uvicorn's keep-alive timer stops at
  the first byte, so it cannot do this;
- `FramingConnection` (gpubot.web.framing) in place of h11's own, so a body framed two ways
  is a 400 that closes the connection;
- at most `max_connections` open (less where the open-file limit is lower). Past it, a new
  connection sheds the oldest connection whose request has not authenticated: idle, still
  sending its headers or its body, or waiting on a handler that has not yet found a valid
  token (a handler marks its request with `mark_authenticated` once the token or signature
  holds). When every other connection is authenticated, the new one is closed itself. So
  sockets that never authenticate cannot keep out Alertmanager: a new connection is shed
  only after every unauthenticated connection older than it, which gives it far longer than
  it needs to send its token; once the token holds it is not shed at all.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import h11
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from gpubot.web.framing import FramingConnection

log = logging.getLogger(__name__)
FILES_KEPT = 64  # open files left for the store, logs, Slack and the cluster's clients
# The listen backlog, which is also how many connections asyncio accepts at once before
# any of them is seen here; a second batch may come before the first is: files for both.
ACCEPT_BURST = 32
# The ASGI scope extension a handler calls once the request's token or signature holds
# (gpubot.slack calls it by this name: it does not import the web layer).
AUTHENTICATED = "gpubot.authenticated"
_BODY_GRACE_S = 1.0
_LOG_EVERY_S = 10.0
_MAX_INCOMPLETE = 64 * 1024  # request line and headers, as in h11's default


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout_s: float
    body_timeout_s: float
    max_connections: int
    shed: Callable[[str], None] | None = None  # told the reason of each connection shed


@dataclass
class _Request:
    """What a handler may say about the request in progress on a connection."""

    authenticated: bool = False

    def mark(self) -> None:
        self.authenticated = True


def mark_authenticated(scope: Scope) -> None:
    """The request's token or signature holds: its connection is no longer sheddable."""
    mark = scope.get("extensions", {}).get(AUTHENTICATED)
    if callable(mark):
        mark()


def connection_bound(configured: int) -> int:
    """`configured`, or fewer where the open-file limit would run out first."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return configured
    return max(1, min(configured, int(soft) - FILES_KEPT - 2 * ACCEPT_BURST))


@dataclass
class _Shedding:
    """Connections open on one server, oldest first, and how many were shed."""

    open: dict[GuardedProtocol, None] = field(default_factory=dict)
    shed: dict[str, int] = field(default_factory=dict)
    logged_at: float = float("-inf")


class GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol with deadlines, one framing, and a bound (see the module)."""

    limits: ConnectionLimits
    bound: int
    shedding: _Shedding

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        size = self.config.h11_max_incomplete_event_size or _MAX_INCOMPLETE
        self.conn = FramingConnection(h11.SERVER, size)
        self._request: _Request | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._phase: str | None = None
        inner = self.app

        async def tagged(scope: Scope, receive: Receive, send: Send) -> None:
            request = self._request = _Request()
            scope.setdefault("extensions", {})[AUTHENTICATED] = request.mark
            await inner(scope, receive, send)

        self.app = tagged

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.shedding.open[self] = None
        if len(self.shedding.open) > self.bound:
            self._make_room()
        self._follow()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        self._request = None
        super().on_response_complete()
        self._follow()  # the next request on this connection gets its own deadlines

    def connection_lost(self, exc: Exception | None) -> None:
        self.shedding.open.pop(self, None)
        self._arm(None)
        super().connection_lost(exc)

    # -- deadlines ------------------------------------------------------------------------

    def _follow(self) -> None:
        """The deadline for what the connection awaits now: a head, a body, or nothing."""
        state = self.conn.their_state
        phase = "head" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None
        if self.transport is None or self.transport.is_closing():
            phase = None
        if phase != self._phase:
            self._arm(phase)

    def _arm(self, phase: str | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._phase = phase
        if phase is not None:
            limits = self.limits
            delay = (
                limits.header_timeout_s
                if phase == "head"
                else limits.body_timeout_s + _BODY_GRACE_S
            )
            self._timer = self.loop.call_later(delay, self._late, phase)

    def _late(self, phase: str) -> None:
        self._timer = None
        if self._phase == phase and not self.transport.is_closing():
            self._phase = None
            self.transport.close()

    # -- the bound ------------------------------------------------------------------------

    def _kind(self) -> str | None:
        """Why this connection may be shed (what it is doing), or None: it may not."""
        if self.transport.is_closing():
            return None
        if self.conn.their_state is h11.IDLE:
            return "idle"
        request = self._request
        return None if request is not None and request.authenticated else "unauthenticated"

    def _make_room(self) -> None:
        """Shed the oldest connection that may be shed (the record is in opening order)."""
        for other in self.shedding.open:
            kind = other._kind() if other is not self else None
            if kind is not None:
                self._shed(other, kind)
                return
        self._shed(self, "over_bound")

    def _shed(self, victim: GuardedProtocol, reason: str) -> None:
        self.shedding.open.pop(victim, None)
        victim.transport.close()
        counts = self.shedding.shed
        counts[reason] = counts.get(reason, 0) + 1
        if self.limits.shed is not None:
            self.limits.shed(reason)
        now = self.loop.time()
        if now - self.shedding.logged_at >= _LOG_EVERY_S:
            self.shedding.logged_at = now
            log.warning(
                "%d connections open, the bound: shedding (%s so far)",
                self.bound,
                ", ".join(f"{n} {k}" for k, n in sorted(counts.items())),
                extra={"event": "http.shed", "reason": reason, "count": self.bound},
            )


def connection_protocol(limits: ConnectionLimits) -> type[GuardedProtocol]:
    """The protocol class for one server: its limits and its own record of connections."""
    bound = connection_bound(limits.max_connections)
    if bound < limits.max_connections:
        log.warning(
            "at most %d open connections, not web.max_connections %d: the open-file limit "
            "(ulimit -n) leaves room for no more",
            bound,
            limits.max_connections,
            extra={"event": "serve.connections", "count": bound},
        )
    attrs = {"limits": limits, "bound": bound, "shedding": _Shedding()}
    return cast(type[GuardedProtocol], type("GuardedH11Protocol", (GuardedProtocol,), attrs))
