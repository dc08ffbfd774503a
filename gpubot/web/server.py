"""Run the service: uvicorn hosting the Starlette app, recovery at start, a periodic tick."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
from collections.abc import Iterator, Sequence
from typing import Protocol

import uvicorn

from gpubot.clock import SystemClock
from gpubot.engine.service import GpubotService
from gpubot.engine.telemetry import LeaderLog
from gpubot.ports import Clock
from gpubot.web.agent_identity import AgentEventAuth
from gpubot.web.app import SlackHandler, create_app
from gpubot.web.connections import ACCEPT_BURST, ConnectionLimits, connection_protocol
from gpubot.web.metrics import WebMetrics

log = logging.getLogger(__name__)
TICK_SECONDS = 15.0
FOLLOW_SECONDS = 1.0  # how soon the leader acts on what another replica recorded
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Companion(Protocol):
    """Something that runs beside the web server (Slack Socket Mode)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class _Server(uvicorn.Server):
    """uvicorn re-raises SIGTERM/SIGINT after its own shutdown, which would kill the process
    before gpubot finishes its runs and closes the store; here a signal only asks to exit."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        original = {sig: signal.signal(sig, self.handle_exit) for sig in _SIGNALS}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.should_exit:  # the bind failed: uvicorn has logged why
            return
        bound = [sock.getsockname() for listener in self.servers for sock in listener.sockets or ()]
        addresses = ", ".join(_url(a) for a in bound) or "-"
        log.info(
            "listening on %s", addresses, extra={"event": "serve.listening", "reason": addresses}
        )


def _url(address: tuple[str, int] | tuple[str, int, int, int]) -> str:
    host = f"[{address[0]}]" if ":" in address[0] else address[0]
    return f"http://{host}:{address[1]}"


def make_server(
    service: GpubotService,
    *,
    host: str,
    port: int,
    webhook_token: str | None,
    max_body_bytes: int,
    body_timeout_s: float = 10.0,
    header_timeout_s: float = 5.0,
    max_connections: int = 512,
    sock: socket.socket | None = None,
    slack_events: SlackHandler | None = None,
    agent_token: str | None = None,
    agent_auth: AgentEventAuth | None = None,
    metrics: WebMetrics | None = None,
    access_log: bool = False,
) -> uvicorn.Server:
    """`access_log`: uvicorn's line per request, through gpubot's log handler and format.
    The connections' deadlines, framing and bound: gpubot.web.connections."""
    app = create_app(
        service,
        webhook_token=webhook_token,
        max_body_bytes=max_body_bytes,
        body_timeout_s=body_timeout_s,
        slack_events=slack_events,
        agent_token=agent_token,
        agent_auth=agent_auth,
        metrics=metrics,
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        log_config=None,  # uvicorn's records go to gpubot's handler (gpubot.logs), same format
        access_log=access_log,
        lifespan="off",
        http=connection_protocol(
            ConnectionLimits(
                header_timeout_s=header_timeout_s,
                body_timeout_s=body_timeout_s,
                max_connections=max_connections,
                shed=metrics.shed if metrics is not None else None,
            )
        ),
        backlog=ACCEPT_BURST,
        # No WebSocket route: an Upgrade stays plain HTTP, on the protocol that holds the
        # connection's deadlines and its place in the bound.
        ws="none",
        timeout_keep_alive=max(1, round(header_timeout_s)),
        h11_max_incomplete_event_size=64 * 1024,  # request line and headers
        # Open connections get this long after SIGTERM; the pod's grace period is 30 s.
        timeout_graceful_shutdown=3,
    )
    if access_log:
        access = logging.getLogger("uvicorn.access")
        access.setLevel(logging.INFO)
        access.propagate = True  # an earlier server in this process may have turned it off
    return _Server(config)


async def ticker(service: GpubotService, clock: Clock | None = None) -> None:
    """A full tick every TICK_SECONDS; in between, every FOLLOW_SECONDS, the leader's look
    at what other replicas recorded (a run, a vote), and a tick at once on becoming it."""
    clock = clock or SystemClock()
    next_tick = clock.monotonic() + TICK_SECONDS
    leader = LeaderLog()
    while True:
        # Ends early when another process wrote to the store (PostgreSQL's notifications).
        await service.background.pause(clock, FOLLOW_SECONDS)
        leader.check(service.read.is_leader())
        try:
            if clock.monotonic() >= next_tick:
                next_tick = clock.monotonic() + TICK_SECONDS
                await service.background.tick()
            else:
                await service.background.follow()
        except Exception:  # a scheduler edge: log, keep ticking
            log.exception("periodic tick failed")


async def serve(
    service: GpubotService,
    server: uvicorn.Server,
    *,
    companions: Sequence[Companion] = (),
    shutdown_grace_s: float = 20.0,
) -> float:
    """Recover interrupted runs, then serve until stopped.

    On SIGTERM: the web server stops, no step starts, running steps are interrupted at
    their next await and left RUNNING for the next leader, and only then the companions
    stop (the Lease is released, so another replica takes over at once), all within
    `shutdown_grace_s`. Returns the seconds left of that grace, for what the process still
    does before it exits (sending the messages queued for Slack).
    """
    for warning in service.start_up_warnings():
        log.warning("%s: gpubot will hold every such step for a human", warning)
    for companion in companions:
        await companion.start()
    # The node caches fill while the server already answers /healthz; /readyz says not
    # ready until they have (or their time is up), so no alert is routed here before.
    service.spawn(service.background.warm())
    await service.background.recover()
    service.background.watch_store()
    ticking = asyncio.create_task(ticker(service))
    loop = asyncio.get_running_loop()
    try:
        await server.serve()
    finally:
        stop_by = loop.time() + shutdown_grace_s
        ticking.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticking
        # Steps stop while this replica still holds the Lease: nobody else starts them
        # until it is released below.
        await service.shutdown(grace_seconds=max(1.0, shutdown_grace_s - 3.0))
        for companion in companions:
            await companion.stop()
    return max(0.0, stop_by - loop.time())
