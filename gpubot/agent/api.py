"""The node agent's HTTP API (Starlette): GPU reads and actions behind a bearer token."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from gpubot.agent.driver import DriverErrorKind, GpuDriverError
from gpubot.agent.operations import GpuOperations
from gpubot.domain.problems import first_problem

log = logging.getLogger(__name__)
B = TypeVar("B", bound=BaseModel)
MAX_BODY_BYTES = 16 * 1024

# How each driver error kind reads over HTTP; the client maps these back to gpubot errors.
STATUS: dict[DriverErrorKind, int] = {
    "out_of_range": 422,
    "invalid_argument": 422,
    "in_use": 409,
    "gpu_lost": 410,
    "not_found": 404,
    "no_permission": 403,
    "not_supported": 501,
    "library_not_found": 503,
    "driver_not_loaded": 503,
    "failed": 500,
}


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    dry_run: bool = False


class PowerLimitBody(_Body):
    watts: float = Field(gt=0, le=5000)


def error(code: int, reason: str, kind: str = "bad_request") -> JSONResponse:
    return JSONResponse({"error": reason.splitlines()[0] if reason else kind, "kind": kind}, code)


def create_agent_app(ops: GpuOperations, *, token: str, node: str) -> Starlette:
    """The agent's routes. `token` is required: an agent that can reset GPUs is never open."""
    if not token:
        raise ValueError("the agent needs a bearer token")
    expected = token.encode()
    Handler = Callable[[Request], Awaitable[Response]]

    def authed(handler: Handler) -> Handler:
        async def wrapped(request: Request) -> Response:
            scheme, _, given = request.headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                given.strip().encode(), expected
            ):
                return error(401, "missing or wrong bearer token", "unauthorized")
            try:
                return await handler(request)
            except GpuDriverError as exc:
                return error(STATUS.get(exc.kind, 500), str(exc), exc.kind)
            except _BadRequestError as exc:
                return error(400, str(exc))
            except Exception:  # the edge: one line out, the details in the log
                log.exception("agent request %s %s failed", request.method, request.url.path)
                return error(500, "internal error in the agent; see its log", "failed")

        return wrapped

    async def in_thread(fn: Callable[[], Any]) -> Any:
        return await asyncio.to_thread(fn)

    async def gpus(request: Request) -> Response:
        system = await in_thread(ops.driver.system)
        reports = await in_thread(ops.driver.gpus)
        return JSONResponse(
            {"node": node, "system": system.__dict__, "gpus": [r.as_json() for r in reports]}
        )

    async def processes(request: Request) -> Response:
        index = _index(request)
        procs = await in_thread(lambda: ops.driver.processes(index=index))
        return JSONResponse({"node": node, "gpu": index, "processes": [p.__dict__ for p in procs]})

    async def power_limit(request: Request) -> Response:
        index, body = _index(request), await _parse(request, PowerLimitBody)
        result = await in_thread(
            lambda: ops.set_power_limit(index=index, watts=body.watts, dry_run=body.dry_run)
        )
        return JSONResponse({"node": node, **result})

    async def restore(request: Request) -> Response:
        index, body = _index(request), await _parse(request, _Body)
        result = await in_thread(lambda: ops.restore_default(index=index, dry_run=body.dry_run))
        return JSONResponse({"node": node, **result})

    async def reset(request: Request) -> Response:
        index, body = _index(request), await _parse(request, _Body)
        result = await in_thread(lambda: ops.reset(index=index, dry_run=body.dry_run))
        return JSONResponse({"node": node, **result})

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    return Starlette(
        routes=[
            Route("/healthz", healthz),
            Route("/v1/gpus", authed(gpus)),
            Route("/v1/gpus/{index:int}/processes", authed(processes)),
            Route("/v1/gpus/{index:int}/power-limit", authed(power_limit), methods=["POST"]),
            Route("/v1/gpus/{index:int}/power-limit/restore", authed(restore), methods=["POST"]),
            Route("/v1/gpus/{index:int}/reset", authed(reset), methods=["POST"]),
        ]
    )


class _BadRequestError(Exception):
    pass


def _index(request: Request) -> int:
    return int(request.path_params["index"])


async def _parse(request: Request, model: type[B]) -> B:
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        raise _BadRequestError(f"body larger than {MAX_BODY_BYTES} bytes")
    try:
        data = json.loads(body or b"{}")
    except json.JSONDecodeError as exc:
        raise _BadRequestError(f"malformed JSON: {exc.msg}") from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _BadRequestError(first_problem(exc)) from exc
