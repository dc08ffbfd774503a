"""HttpNodeAgent: ports.NodeAgent over the node agent's HTTP API (httpx)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from gpubot.domain.cluster import GpuState
from gpubot.errors import (
    GpubotError,
    InputError,
    NotFoundError,
    PermanentStepError,
    TemporaryStepError,
)


class HttpNodeAgent:
    """Talks to `gpubot agent` on each node; `url_template` has `{node}` in it.

    Connection failures are retried (the request never reached the agent); anything after
    that is not, since a POST may have taken effect: the executor's check() decides then.
    """

    def __init__(
        self,
        *,
        url_template: str,
        token: str | None,
        timeout_s: float = 10.0,
        reset_timeout_s: float = 180.0,
        connect_retries: int = 2,
        retry_delay_s: float = 0.5,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if "{node}" not in url_template:
            raise ValueError(f"agent URL template {url_template!r} has no {{node}}")
        self._template = url_template.rstrip("/")
        self._timeout = httpx.Timeout(timeout_s)
        self._reset_timeout = httpx.Timeout(timeout_s, read=reset_timeout_s)
        self._retries = connect_retries
        self._delay = retry_delay_s
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.AsyncClient(headers=headers, transport=transport)

    async def aclose(self) -> None:
        await self._client.aclose()

    def url(self, node: str) -> str:
        return self._template.replace("{node}", node)

    # ports.NodeAgent

    async def gpus(self, *, node: str) -> list[GpuState]:
        data = await self._call("GET", node, "/v1/gpus")
        return [gpu_state(g) for g in data["gpus"]]

    async def set_power_limit(self, *, node: str, gpu: int, watts: float) -> GpuState:
        data = await self._call("POST", node, f"/v1/gpus/{gpu}/power-limit", json={"watts": watts})
        return gpu_state(data["gpu_state"])

    async def reset_gpu(self, *, node: str, gpu: int) -> GpuState:
        data = await self._call(
            "POST", node, f"/v1/gpus/{gpu}/reset", json={}, limits=self._reset_timeout
        )
        return gpu_state(data["gpu_state"])

    # The agent's own extras

    async def restore_power_limit(self, *, node: str, gpu: int) -> GpuState:
        data = await self._call("POST", node, f"/v1/gpus/{gpu}/power-limit/restore", json={})
        return gpu_state(data["gpu_state"])

    async def _call(
        self,
        method: str,
        node: str,
        path: str,
        *,
        json: dict[str, Any] | None = None,
        limits: httpx.Timeout | None = None,
    ) -> dict[str, Any]:
        url = self.url(node) + path
        attempt = 0
        while True:
            try:
                response = await self._client.request(
                    method, url, json=json, timeout=limits or self._timeout
                )
                break
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                attempt += 1
                if attempt > self._retries:
                    raise TemporaryStepError(
                        f"node agent on {node} unreachable at {url}: {exc}", delay=5.0
                    ) from exc
                await asyncio.sleep(self._delay * attempt)
            except httpx.TimeoutException as exc:
                raise TemporaryStepError(f"node agent on {node} timed out on {path}") from exc
            except httpx.HTTPError as exc:
                raise TemporaryStepError(f"node agent on {node}: {exc}") from exc
        if response.status_code == 200:
            body: dict[str, Any] = response.json()
            return body
        raise agent_error(node, response)


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
        return PermanentStepError(message + " (check GPUBOT_AGENT_TOKEN on the bot and agent)")
    if code in (403, 409, 410, 501) or kind in ("in_use", "gpu_lost"):
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
