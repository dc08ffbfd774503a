"""Run the service: uvicorn hosting the Starlette app, recovery at start, a periodic tick."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket

import uvicorn

from gpubot.engine.service import GpubotService
from gpubot.web.app import create_app

log = logging.getLogger(__name__)
TICK_SECONDS = 15.0


def make_server(
    service: GpubotService,
    *,
    host: str,
    port: int,
    webhook_token: str | None,
    max_body_bytes: int,
    sock: socket.socket | None = None,
) -> uvicorn.Server:
    app = create_app(service, webhook_token=webhook_token, max_body_bytes=max_body_bytes)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", access_log=False, lifespan="off"
    )
    return uvicorn.Server(config)


async def _ticker(service: GpubotService) -> None:
    while True:
        await asyncio.sleep(TICK_SECONDS)
        try:
            await service.tick()
        except Exception:  # a scheduler edge: log, keep ticking
            log.exception("periodic tick failed")


async def serve(service: GpubotService, server: uvicorn.Server) -> None:
    """Recover interrupted runs, then serve until stopped."""
    await service.recover()
    ticker = asyncio.create_task(_ticker(service))
    try:
        await server.serve()
    finally:
        ticker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticker
        await service.wait_idle()
