"""Servers for the intake benchmark: gpubot's real intake and a bare 200 endpoint, same settings."""

from __future__ import annotations

import os
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


def bare() -> Starlette:
    async def ok(request: Request) -> Response:
        await request.body()
        return JSONResponse({"status": "ok"})

    return Starlette(routes=[Route("/alertmanager", ok, methods=["POST"])])


def gpubot() -> Starlette:
    from gpubot.config import load_settings
    from gpubot.web.app import create_app
    from gpubot.wiring import build_app

    settings = load_settings(
        None, store={"url": os.environ["BENCH_STORE_URL"]}, runbooks={"builtin": False}
    )
    # The console notifier would print every incident; the benchmark measures intake.
    app = build_app(settings, out=open(os.devnull, "w"))  # noqa: SIM115
    return create_app(app.service)


if __name__ == "__main__":
    kind, port = sys.argv[1], int(sys.argv[2])
    factory = bare if kind == "bare" else gpubot
    uvicorn.run(factory(), host="127.0.0.1", port=port, log_level="warning", access_log=False)
