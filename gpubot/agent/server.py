"""Run the node agent: its HTTP API on uvicorn, and the XID watcher when a bot URL is set."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

import uvicorn

from gpubot.agent.api import AgentTokens, Callers, create_agent_app
from gpubot.agent.dcgm import Diagnostics
from gpubot.agent.driver import GpuDriver, XidSource
from gpubot.agent.operations import GpuOperations
from gpubot.agent.xid_watcher import BotEventSender, XidWatcher
from gpubot.errors import InputError

log = logging.getLogger(__name__)


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


async def serve_agent(driver: GpuDriver, xids: XidSource | None, opts: AgentOptions) -> None:
    ops = GpuOperations(driver, reset_timeout_s=opts.reset_timeout_s, diagnostics=opts.diagnostics)
    app = create_agent_app(ops, tokens=opts.tokens, node=opts.node)
    config = uvicorn.Config(
        app, host=opts.host, port=opts.port, log_level="warning", access_log=False
    )
    server = uvicorn.Server(config)
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
        sender = BotEventSender(bot_url=opts.bot_url, token=token)
        model = next((g.name for g in driver.gpus() if g.name), "") if opts.node else ""
        watcher = XidWatcher(
            xids,
            node=opts.node,
            cluster=opts.cluster,
            send=sender,
            window_s=opts.xid_window_s,
            model=model,
        )
        watcher_task = asyncio.create_task(watcher.run(stop))
    else:
        log.warning("agent.bot_url unset: XID events are not forwarded to the bot")
    try:
        await server.serve()
    finally:
        stop.set()
        if watcher_task is not None:
            watcher_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher_task
        if sender is not None:
            await sender.aclose()
