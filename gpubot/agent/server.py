"""Run the node agent: its HTTP API on uvicorn, and the XID watcher when a bot URL is set."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType

import uvicorn

from gpubot.agent.api import AgentTokens, Callers, create_agent_app
from gpubot.agent.dcgm import Diagnostics
from gpubot.agent.driver import GpuDriver, GpuDriverError, XidSource
from gpubot.agent.evidence import Evidence
from gpubot.agent.metrics import AgentMetrics
from gpubot.agent.observed import ObservedDriver, ObservedOperations
from gpubot.agent.operations import GpuOperations
from gpubot.agent.readiness import Readiness
from gpubot.agent.request_log import ASGIApp
from gpubot.agent.xid_watcher import BotEventSender, XidWatcher
from gpubot.errors import InputError
from gpubot.ports import Clock

log = logging.getLogger(__name__)
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass(frozen=True)
class AgentOptions:
    tokens: Callers  # who may call: AgentTokens (hmac) or BotServiceAccount (Kubernetes)
    node: str
    cluster: str
    host: str
    port: int
    bot_url: str | None = None
    xid_window_s: float = 300.0
    reset_timeout_s: float = 120.0
    diagnostics: Diagnostics | None = None
    evidence: Evidence | None = None  # None: the node's tools on PATH, default caps
    driver_name: str = "nvml"
    # What the agent sends the bot with its XID events: its projected ServiceAccount token
    # (re-read each time) on Kubernetes, its read token in hmac mode.
    event_token: Callable[[], str] | None = None


def parse_listen(text: str) -> tuple[str, int]:
    """HOST:PORT (IPv6 in brackets: [::]:9400) → (host, port); InputError otherwise."""
    host, sep, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InputError(f"--listen must be HOST:PORT (for example 0.0.0.0:9400), not {text!r}")
    return host, int(port)


class AgentServer(uvicorn.Server):
    """uvicorn that logs the signal that stops it, and does not re-raise it afterwards (which
    would end the process before the XID sender is closed and the last line is written)."""

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

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if not self.should_exit:
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = str(sig)
            log.info(
                "%s received: stopping once the open requests are answered",
                name,
                extra={"event": "agent.stopping", "reason": name},
            )
        super().handle_exit(sig, frame)


def build_agent_app(
    driver: GpuDriver,
    opts: AgentOptions,
    *,
    metrics: AgentMetrics,
    clock: Clock | None = None,
) -> ASGIApp:
    """The agent's app, its driver calls, actions and requests logged and counted."""
    observed = ObservedDriver(driver, metrics)
    ops = ObservedOperations(
        GpuOperations(
            observed,
            reset_timeout_s=opts.reset_timeout_s,
            diagnostics=opts.diagnostics,
            evidence=opts.evidence,
        ),
        metrics,
    )
    readiness = Readiness(lambda: observed.system().gpu_count, clock=clock)
    return create_agent_app(
        ops, tokens=opts.tokens, node=opts.node, readiness=readiness, metrics=metrics
    )


def build_agent_server(
    driver: GpuDriver, opts: AgentOptions, *, metrics: AgentMetrics
) -> AgentServer:
    """The agent's app on uvicorn, uvicorn's own records in gpubot's log format."""
    config = uvicorn.Config(
        build_agent_app(driver, opts, metrics=metrics),
        host=opts.host,
        port=opts.port,
        log_level="warning",
        log_config=None,  # uvicorn's records go to gpubot's handler, in the same format
        access_log=False,
        lifespan="off",
        # No graceful-shutdown timeout: a reset or a diagnostic under way finishes and is
        # answered (the pod's termination grace period bounds the wait).
    )
    return AgentServer(config)


def log_start(driver: GpuDriver, opts: AgentOptions) -> None:
    """One line: the node, the driver, where it listens, the bot, read-only or not, GPUs."""
    try:
        info = driver.system()
        gpus, version = str(info.gpu_count), info.driver_version or "unknown"
    except GpuDriverError as exc:  # /readyz says not ready; the agent still starts
        gpus, version = "unknown", f"not answering ({exc.kind})"
    mode = "read-only" if opts.tokens.read_only else "mutating"
    host = f"[{opts.host}]" if ":" in opts.host else opts.host
    listen = f"{host}:{opts.port}"
    log.info(
        "agent for node %s starting: %s driver %s, %s GPU(s), listening on %s, %s, bot %s",
        opts.node,
        opts.driver_name,
        version,
        gpus,
        listen,
        mode,
        opts.bot_url or "unset (XID events not forwarded)",
        extra={
            "event": "agent.start",
            "node": opts.node,
            "status": mode,
            "path": listen,
            "count": gpus,
            "reason": f"driver {version}",
        },
    )
    why = opts.diagnostics.status() if opts.diagnostics is not None else "none configured"
    if why is not None:
        # Said at start, not first at an incident: every release then follows
        # policy.diag_unavailable, and the bot's plans say so too.
        log.warning(
            "DCGM diagnostics cannot run on node %s: %s",
            opts.node,
            why,
            extra={"event": "agent.diag_unavailable", "node": opts.node, "reason": why},
        )


async def serve_agent(
    driver: GpuDriver,
    xids: XidSource | None,
    opts: AgentOptions,
    *,
    metrics: AgentMetrics | None = None,
    sock: socket.socket | None = None,
) -> None:
    metrics = metrics or AgentMetrics()
    server = build_agent_server(driver, opts, metrics=metrics)
    log_start(driver, opts)
    stop = asyncio.Event()
    watcher_task = None
    sender = None
    if opts.bot_url and xids is not None:
        # Events go out with the read token (hmac) or the agent's own ServiceAccount token:
        # the bot takes them only for this node, and a bot_url pointed elsewhere learns
        # nothing that can change a GPU.
        token = opts.event_token
        if token is None and isinstance(opts.tokens, AgentTokens):
            read = opts.tokens.read
            token = lambda: read  # noqa: E731
        if token is None:
            raise ValueError("agent.bot_url is set but the agent has no token to send events")
        sender = BotEventSender(
            bot_url=opts.bot_url,
            token=token,
            counted=lambda outcome: metrics.xid_event(outcome=outcome),
        )
        model = _model(driver) if opts.node else ""
        watcher = XidWatcher(
            ObservedDriver(driver, metrics, xids=xids),
            node=opts.node,
            cluster=opts.cluster,
            send=sender,
            window_s=opts.xid_window_s,
            model=model,
        )
        watcher_task = asyncio.create_task(watcher.run(stop))
    else:
        log.warning(
            "agent.bot_url unset: XID events are not forwarded to the bot",
            extra={"event": "agent.no_bot_url"},
        )
    try:
        await server.serve(sockets=[sock] if sock is not None else None)
    finally:
        stop.set()
        if watcher_task is not None:
            watcher_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher_task
        if sender is not None:
            await sender.aclose()
        log.info("agent stopped", extra={"event": "agent.stopped", "node": opts.node})


def _model(driver: GpuDriver) -> str:
    try:
        return next((g.name for g in driver.gpus() if g.name), "")
    except GpuDriverError:
        return ""  # the alert goes out without modelName
