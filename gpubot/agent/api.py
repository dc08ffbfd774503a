"""The node agent's HTTP API (Starlette): GPU reads and actions behind this node's tokens."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from gpubot.agent.driver import DriverErrorKind, GpuDriverError
from gpubot.agent.kernel_log import MAX_WINDOW_S, KernelLogUnavailable, read_kernel_log
from gpubot.agent.metrics import CONTENT_TYPE, AgentMetrics
from gpubot.agent.operations import Operations
from gpubot.agent.readiness import Readiness
from gpubot.agent.request_log import RequestLog
from gpubot.domain.control.agent_tokens import Scope, bearer, same_token
from gpubot.domain.validation_errors import first_problem
from gpubot.errors import IdentityUnavailableError

log = logging.getLogger(__name__)
B = TypeVar("B", bound=BaseModel)
MAX_BODY_BYTES = 16 * 1024
MAX_NESTING = 8  # the bodies are flat objects; deeper is an attack on the parser

# How each driver error kind reads over HTTP; the client maps these back to gpubot errors.
STATUS: dict[DriverErrorKind, int] = {
    "out_of_range": 422,
    "invalid_argument": 422,
    "in_use": 409,
    "busy": 409,
    "uuid_mismatch": 409,
    "gpu_lost": 410,
    "not_found": 404,
    "no_permission": 403,
    "not_supported": 501,
    "library_not_found": 503,
    "driver_not_loaded": 503,
    "dcgm_missing": 503,
    "hostengine_down": 503,
    "timeout": 504,
    "unparseable": 502,
    "failed": 500,
}


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    dry_run: bool = False


class PowerLimitBody(_Body):
    watts: float = Field(gt=0, le=5000)


class ResetBody(_Body):
    # The GPU the alert named (DCGM's UUID label): the agent refuses when the index disagrees.
    uuid: str | None = Field(None, pattern=r"^(GPU|MIG)-[0-9A-Za-z-]{1,64}$")


class DiagBody(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # Strict: "2" or 2.0 is refused, not read as a level; checked before anything runs.
    level: int = Field(ge=1, le=3, strict=True)
    gpus: list[Annotated[int, Field(ge=0, le=63, strict=True)]] = Field(
        default_factory=list, max_length=64
    )


class _Empty(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Callers(Protocol):
    """Who may call this agent. `authorize` answers None (allowed) or (status, one line)."""

    @property
    def read_only(self) -> bool: ...

    async def authorize(self, token: str, *, needs: Scope) -> tuple[int, str] | None: ...


@dataclass(frozen=True)
class AgentTokens:
    """hmac mode (hosts without Kubernetes): this node's own tokens, never the bot's master.

    `read` reads, `mutate` also acts; without `mutate` the agent is read-only: every action
    answers 403.
    """

    read: str
    mutate: str | None = None

    @property
    def read_only(self) -> bool:
        return self.mutate is None

    def scope_of(self, given: str) -> Scope | None:
        if self.mutate and same_token(given, self.mutate):
            return "mutate"
        if same_token(given, self.read):
            return "read"
        return None

    async def authorize(self, token: str, *, needs: Scope) -> tuple[int, str] | None:
        scope = self.scope_of(token)
        if scope is None:
            return 401, "missing or wrong bearer token"
        if needs == "mutate" and scope != "mutate":
            if self.mutate is None:
                return 403, "this agent is read-only (it has no mutate token)"
            return 403, "a read token cannot change GPUs; this needs the node's mutate token"
        return None


def error(code: int, reason: str, kind: str = "bad_request") -> JSONResponse:
    return JSONResponse({"error": reason.splitlines()[0] if reason else kind, "kind": kind}, code)


def create_agent_app(
    ops: Operations,
    *,
    tokens: Callers,
    node: str,
    readiness: Readiness | None = None,
    metrics: AgentMetrics | None = None,
) -> Starlette:
    """The agent's routes, every one but the probes and /metrics behind `tokens`: an agent
    is never open.

    `/healthz`, `/readyz` and `/metrics` need no token: probes and Prometheus send none, and
    they tell no GPU's state, only how many NVML sees and counts of what the agent did (see
    docs/operate/logs-and-alerts.md, "Node agent: logs, metrics and probes").
    """
    if isinstance(tokens, AgentTokens) and not tokens.read:
        raise ValueError("the agent needs its node's read token")
    Handler = Callable[[Request], Awaitable[Response]]

    def authed(handler: Handler, *, needs: Scope = "read") -> Handler:
        async def wrapped(request: Request) -> Response:
            given = bearer(request.headers.get("authorization", ""))
            if given is None:
                return error(401, f"missing or wrong bearer token for node {node}", "unauthorized")
            try:
                refused = await tokens.authorize(given, needs=needs)
            except IdentityUnavailableError as exc:
                log.warning("agent: cannot review a caller's token: %s", exc)
                return error(503, "cannot check the caller's token now; retry", "unavailable")
            if refused is not None:
                code, reason = refused
                if code == 401:
                    return error(401, f"{reason} for node {node}", "unauthorized")
                return error(code, reason, "forbidden")
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
        index, body = _index(request), await _parse(request, ResetBody)
        result = await in_thread(
            lambda: ops.reset(index=index, uuid=body.uuid, dry_run=body.dry_run)
        )
        return JSONResponse({"node": node, **result})

    async def diag(request: Request) -> Response:
        body = await _parse(request, DiagBody)
        result = await in_thread(lambda: ops.diag(level=body.level, gpus=tuple(body.gpus)))
        return JSONResponse({"node": node, **result})

    async def diag_status(request: Request) -> Response:
        why = await in_thread(ops.diag_status)
        return JSONResponse({"node": node, "available": why is None, "reason": why or ""})

    async def kernel_log(request: Request) -> Response:
        try:
            since, until = (int(request.query_params[k]) for k in ("since", "until"))
        except (KeyError, ValueError):
            return error(400, "since and until are Unix seconds")
        if not 0 <= until - since <= MAX_WINDOW_S:
            return error(400, f"the window must be 0 to {MAX_WINDOW_S} s")
        try:
            lines = await in_thread(lambda: read_kernel_log(since=since, until=until))
        except KernelLogUnavailable as exc:
            return error(503, str(exc), "kernel_log_unavailable")
        return JSONResponse({"node": node, "lines": lines})

    async def evidence(request: Request) -> Response:
        await _parse(request, _Empty)

        def gathered() -> bytes:  # tens of MiB to encode: in the thread, as the gathering
            parts = ops.evidence()
            return json.dumps(
                {
                    "node": node,
                    "parts": [
                        {
                            "name": p.name,
                            "status": p.status,
                            "detail": p.detail,
                            "seconds": round(p.seconds, 3),
                            "content": base64.b64encode(p.content).decode("ascii"),
                        }
                        for p in parts
                    ],
                }
            ).encode()

        return Response(await in_thread(gathered), media_type="application/json")

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    ready = readiness or Readiness(lambda: ops.driver.system().gpu_count)

    async def readyz(request: Request) -> Response:
        verdict = await ready.verdict()
        return PlainTextResponse(verdict.reason, 200 if verdict.ready else 503)

    async def exposition(request: Request) -> Response:
        body = metrics.exposition() if metrics is not None else b""
        return Response(body, media_type=CONTENT_TYPE)

    return Starlette(
        middleware=[Middleware(RequestLog, metrics=metrics)],
        routes=[
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/metrics", exposition),
            Route("/v1/gpus", authed(gpus)),
            Route("/v1/gpus/{index:int}/processes", authed(processes)),
            Route(
                "/v1/gpus/{index:int}/power-limit",
                authed(power_limit, needs="mutate"),
                methods=["POST"],
            ),
            Route(
                "/v1/gpus/{index:int}/power-limit/restore",
                authed(restore, needs="mutate"),
                methods=["POST"],
            ),
            Route("/v1/gpus/{index:int}/reset", authed(reset, needs="mutate"), methods=["POST"]),
            # Diagnostics change no setting but load every GPU they test for minutes: they
            # need the mutate token, like any other action.
            Route("/v1/diag", authed(diag, needs="mutate"), methods=["POST"]),
            # Whether diagnostics can run (dcgmi there, host engine answering): a read.
            Route("/v1/diag/status", authed(diag_status)),
            Route("/v1/kernel-log", authed(kernel_log)),
            # Evidence changes nothing, but nvidia-bug-report.sh loads the node for minutes
            # and the bundle tells much about it: the mutate token, not the read token that
            # the agent also sends to bot_url with its XID events.
            Route("/v1/evidence", authed(evidence, needs="mutate"), methods=["POST"]),
        ],
    )


class _BadRequestError(Exception):
    pass


def _index(request: Request) -> int:
    return int(request.path_params["index"])


async def _parse(request: Request, model: type[B]) -> B:
    body = bytearray()
    async for chunk in request.stream():  # capped while reading, not after
        body.extend(chunk)
        if len(body) > MAX_BODY_BYTES:
            raise _BadRequestError(f"body larger than {MAX_BODY_BYTES} bytes")
    if _nesting(bytes(body)) > MAX_NESTING:
        raise _BadRequestError(f"JSON nested deeper than {MAX_NESTING} levels")
    try:
        data = json.loads(bytes(body) or b"{}")
    except json.JSONDecodeError as exc:
        raise _BadRequestError(f"malformed JSON: {exc.msg}") from exc
    except (RecursionError, UnicodeDecodeError) as exc:
        raise _BadRequestError("malformed JSON") from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _BadRequestError(first_problem(exc)) from exc


def _nesting(body: bytes) -> int:
    """The deepest [ / { nesting in a JSON text, brackets inside strings not counted."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest
