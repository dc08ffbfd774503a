"""HttpNodeAgent: ports.NodeAgent over the node agent's HTTP API (httpx)."""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from gpubot.backends.agent_address import AgentAddresses
from gpubot.clock import SystemClock
from gpubot.domain.control.agent_tokens import Scope, node_token
from gpubot.domain.fleet.cluster import GpuState
from gpubot.domain.gpus.evidence import EvidencePart
from gpubot.errors import (
    GpubotError,
    IdentityUnavailableError,
    InputError,
    NotFoundError,
    PermanentStepError,
    TemporaryStepError,
)
from gpubot.knowledge.dcgm_diag import DIAG_TIMEOUT_S, DiagParseError, DiagReport, cap
from gpubot.knowledge.pci import normalise_bus_id
from gpubot.ports import Clock

# The largest answer read from an agent: evidence parts (base64) within the agent's caps.
MAX_ANSWER_BYTES = 96 * 1024 * 1024
_PARSE_IN_THREAD = 1024 * 1024
# How long evidence may take: the agent's slowest part (nvidia-bug-report.sh, 240 s) and more.
EVIDENCE_TIMEOUT_S = 300.0


class HttpNodeAgent:
    """Talks to `gpubot agent` on each node, at the address the cluster reports for it.

    In hmac mode each call carries that node's own token, derived from the master secret: a
    read token for reads, a mutate token for actions, so an agent (or anyone it is misrouted
    to) never sees a credential for another node. On Kubernetes each call carries a token
    of the bot's ServiceAccount, which the agent checks with the TokenReview API: by default
    one issued for that node alone (`node_tokens`, audience `<audience>:<node>`), or the
    bot's projected token (`token_file`, re-read each time: the kubelet rotates it), which
    every agent receives. Connection failures
    are retried (the request never reached the agent); anything after that is not, since a
    POST may have taken effect: the executor's check() decides then.
    """

    def __init__(
        self,
        *,
        addresses: AgentAddresses,
        master: str | None,
        token_file: Path | None = None,
        node_tokens: Callable[[str], Awaitable[str]] | None = None,
        timeout_s: float = 10.0,
        reset_timeout_s: float = 180.0,
        connect_retries: int = 2,
        retry_delay_s: float = 0.5,
        ca_file: Path | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._clock: Clock = clock or SystemClock()
        self._addresses = addresses
        self._master = master or None
        self._token_file = token_file
        self._node_tokens = node_tokens
        self._timeout = httpx.Timeout(timeout_s)
        self._reset_timeout = httpx.Timeout(timeout_s, read=reset_timeout_s)
        self._retries = connect_retries
        self._delay = retry_delay_s
        verify: bool | str = str(ca_file) if ca_file is not None else True
        # No redirects: an agent's answer never sends the token anywhere else.
        self._client = httpx.AsyncClient(
            transport=transport, verify=verify, follow_redirects=False, trust_env=False
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    # ports.NodeAgent

    async def gpus(self, *, node: str) -> list[GpuState]:
        data = await self._call("GET", node, "/v1/gpus", scope="read")
        return [gpu_state(g) for g in data["gpus"]]

    async def set_power_limit(self, *, node: str, gpu: int, watts: float) -> GpuState:
        data = await self._call(
            "POST", node, f"/v1/gpus/{int(gpu)}/power-limit", json={"watts": watts}
        )
        return gpu_state(data["gpu_state"])

    async def reset_gpu(self, *, node: str, gpu: int, uuid: str | None = None) -> GpuState:
        body: dict[str, Any] = {"uuid": uuid} if uuid else {}
        data = await self._call(
            "POST", node, f"/v1/gpus/{int(gpu)}/reset", json=body, limits=self._reset_timeout
        )
        return gpu_state(data["gpu_state"])

    async def diag(self, *, node: str, level: int, gpus: Sequence[int] | None = None) -> DiagReport:
        body = {"level": int(level), "gpus": [int(g) for g in gpus or ()]}
        # The agent stops dcgmi at its own limit; wait a little longer for its answer.
        limits = httpx.Timeout(self._timeout.connect, read=DIAG_TIMEOUT_S.get(level, 300) + 60)
        data = await self._call("POST", node, "/v1/diag", json=body, limits=limits)
        try:
            return DiagReport.from_json(data)
        except DiagParseError as exc:
            raise PermanentStepError(f"node agent on {node}: diagnostics answer: {exc}") from exc

    async def diag_status(self, *, node: str) -> str | None:
        data = await self._call("GET", node, "/v1/diag/status", scope="read")
        if data.get("available") is True:
            return None
        reason = data.get("reason")
        return cap(str(reason), 300) if reason else "the agent says DCGM cannot run"

    async def kernel_log(self, *, node: str, since: datetime, until: datetime) -> str:
        window = f"since={int(since.timestamp())}&until={int(until.timestamp())}"
        data = await self._call("GET", node, f"/v1/kernel-log?{window}", scope="read")
        lines = data.get("lines")
        return "\n".join(str(x) for x in lines) if isinstance(lines, list) else ""

    async def gather_evidence(self, *, node: str) -> list[EvidencePart]:
        limits = httpx.Timeout(self._timeout.connect, read=EVIDENCE_TIMEOUT_S)
        data = await self._call("POST", node, "/v1/evidence", json={}, limits=limits)
        return await asyncio.to_thread(evidence_parts, node, data)

    # The agent's own extras

    async def restore_power_limit(self, *, node: str, gpu: int) -> GpuState:
        data = await self._call("POST", node, f"/v1/gpus/{int(gpu)}/power-limit/restore", json={})
        return gpu_state(data["gpu_state"])

    async def _call(
        self,
        method: str,
        node: str,
        path: str,
        *,
        scope: Scope = "mutate",
        json: dict[str, Any] | None = None,
        limits: httpx.Timeout | None = None,
    ) -> dict[str, Any]:
        # Raises before any request (or token) for a node the cluster does not report.
        url = await self._addresses.base_url(node) + path
        token = await self._token(node, scope)
        headers = {"authorization": f"Bearer {token}"}
        attempt = 0
        while True:
            try:
                request = self._client.build_request(
                    method, url, json=json, headers=headers, timeout=limits or self._timeout
                )
                response = await _read_capped(self._client, request, node)
                break
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                self._addresses.forget()  # the agent may have moved: read the cluster again
                attempt += 1
                if attempt > self._retries:
                    raise TemporaryStepError(
                        f"node agent on {node} unreachable at {url}: {exc}", delay=5.0
                    ) from exc
                await self._clock.sleep(self._delay * attempt)
                url = await self._addresses.base_url(node) + path
            except httpx.TimeoutException as exc:
                raise TemporaryStepError(f"node agent on {node} timed out on {path}") from exc
            except httpx.HTTPError as exc:
                raise TemporaryStepError(f"node agent on {node}: {exc}") from exc
        if response.status_code != 200:
            raise agent_error(node, response)
        try:
            # A large answer (evidence) is parsed off the event loop.
            big = len(response.content) > _PARSE_IN_THREAD
            body = await asyncio.to_thread(response.json) if big else response.json()
        except ValueError as exc:
            raise TemporaryStepError(f"node agent on {node}: answer is not JSON") from exc
        if not isinstance(body, dict) or body.get("node") != node:
            answered = body.get("node") if isinstance(body, dict) else None
            raise PermanentStepError(
                f"the agent at {url} answers for node {answered!r}, not {node}; not using it"
            )
        return body

    async def _token(self, node: str, scope: Scope) -> str:
        if self._node_tokens is not None:
            try:
                return await self._node_tokens(node)
            except IdentityUnavailableError as exc:
                raise TemporaryStepError(f"no token for {node}'s agent: {exc}", delay=5.0) from exc
        if self._token_file is not None:
            try:
                token = self._token_file.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise TemporaryStepError(
                    f"cannot read the bot's ServiceAccount token {self._token_file}: "
                    f"{exc.strerror}",
                    delay=5.0,
                ) from exc
            if not token:
                raise TemporaryStepError(f"{self._token_file} is empty", delay=5.0)
            return token
        if self._master is None:
            raise PermanentStepError(
                "the bot has no agent master secret: set GPUBOT_AGENT_TOKEN or agent.token_file"
            )
        return node_token(master=self._master, node=node, scope=scope)


async def _read_capped(
    client: httpx.AsyncClient, request: httpx.Request, node: str
) -> httpx.Response:
    """The answer read into memory, never more than MAX_ANSWER_BYTES of it."""
    response = await client.send(request, stream=True)
    try:
        body = bytearray()
        async for chunk in response.aiter_bytes():  # decoded: the cap holds after gzip too
            body += chunk
            if len(body) > MAX_ANSWER_BYTES:
                raise PermanentStepError(
                    f"node agent on {node}: answer larger than {MAX_ANSWER_BYTES} bytes; not read"
                )
    finally:
        await response.aclose()
    headers = {
        k: v
        for k, v in response.headers.items()
        if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    }
    return httpx.Response(
        response.status_code,
        headers=headers,
        content=bytes(body),
        request=request,
    )


def evidence_parts(node: str, data: dict[str, Any]) -> list[EvidencePart]:
    """The agent's evidence answer as parts (base64 decoded: call it in a thread)."""
    try:
        return [
            EvidencePart(
                name=str(p["name"]),
                status=p["status"],
                content=base64.b64decode(str(p.get("content", "")), validate=True),
                detail=cap(str(p.get("detail", "")), 300),
                seconds=float(p.get("seconds", 0.0)),
            )
            for p in data["parts"]
        ]
    except (KeyError, TypeError, ValueError, binascii.Error) as exc:
        raise PermanentStepError(
            f"node agent on {node}: evidence answer gpubot cannot read ({exc})"
        ) from exc


# DCGM diagnostics that cannot run: retrying at once would not help, a person must look.
_DIAG_CANNOT_RUN = ("dcgm_missing", "hostengine_down", "timeout", "unparseable")


def agent_error(node: str, response: httpx.Response) -> GpubotError:
    """The agent's JSON error as the gpubot error the executor acts on."""
    try:
        body = response.json()
        reason, kind = str(body.get("error", "")), str(body.get("kind", ""))
    except ValueError:
        reason, kind = response.text[:200], ""
    message = f"node agent on {node}: {reason or response.reason_phrase}"
    code = response.status_code
    if code == 422:
        return InputError(message)
    if code == 404:
        return NotFoundError(message)
    if code == 401:
        return PermanentStepError(
            message + " (hmac: the agent's tokens must be derived from the bot's "
            f"GPUBOT_AGENT_TOKEN, gpubot agent-token --node {node}; serviceaccount: bot and "
            "agent must use the same audience)"
        )
    if code in (403, 409, 410, 501) or kind in ("in_use", "gpu_lost", *_DIAG_CANNOT_RUN):
        return PermanentStepError(message)
    return TemporaryStepError(message, delay=5.0)


def gpu_state(data: dict[str, Any]) -> GpuState:
    """An agent GpuReport (JSON) as the bot's GpuState; unknown readings keep their defaults."""
    known = {k: v for k, v in data.items() if v is not None}
    fields: dict[str, Any] = {
        "index": int(data["index"]),
        "uuid": str(known.get("uuid", "")),
        "name": str(known.get("name", "")),
        "memory_total_mib": int(known.get("memory_total_mib", 0)),
        "lost": data.get("condition") == "lost",
        "xid_errors": tuple(int(x) for x in known.get("xid_errors", ())),
        "throttle_reasons": tuple(str(r) for r in known.get("throttle_reasons", ())),
        "pci_bus_id": normalise_bus_id(str(known.get("pci_bus_id", ""))) or "",
    }
    for name, cast in (
        ("memory_used_mib", int),
        ("temperature_c", int),
        ("utilization_pct", int),
        ("power_draw_w", float),
        ("power_limit_w", float),
        ("power_min_w", float),
        ("power_max_w", float),
        ("power_default_w", float),
    ):
        if name in known:
            fields[name] = cast(known[name])
    if fields["lost"]:
        fields |= {"utilization_pct": 0, "power_draw_w": 0.0}
    return GpuState(**fields)
