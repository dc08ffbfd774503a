"""Where a node's agent listens: an address the cluster reports for that node, cached briefly."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from gpubot.domain.k8s_names import check_node_name
from gpubot.errors import InputError, NotFoundError
from gpubot.ports import KubeApi

log = logging.getLogger(__name__)
AddressSource = Literal["internal_ip", "agent_pod"]


@dataclass(frozen=True)
class AgentLocation:
    """How to find agents in one cluster (from config, never from an alert)."""

    cluster: str
    address: AddressSource = "internal_ip"
    port: int = 9400
    scheme: Literal["http", "https"] = "http"
    namespace: str = "gpubot"
    selector: str = "app.kubernetes.io/component=agent"
    cache_seconds: float = 30.0


class AgentAddresses:
    """Node name → agent base URL, built only from the cluster's own answer.

    The node must exist in the cluster, and the host is the IP address the cluster reports
    for it (the Node's InternalIP, or the IP of the agent pod scheduled on it), so no text
    from an alert ever reaches a URL. One listing serves every node for `cache_seconds`: a
    fleet-wide run does not list nodes per call, and a node the listing lacks is refused
    without another one (a node that joined is found on the next refresh).
    """

    def __init__(
        self,
        kube: KubeApi,
        location: AgentLocation,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._kube = kube
        self._where = location
        self._monotonic = monotonic
        self._table: dict[str, str] = {}
        self._read_at: float | None = None
        self._lock = asyncio.Lock()

    async def base_url(self, node: str) -> str:
        """`scheme://IP:port` of `node`'s agent; InputError or NotFoundError before any request."""
        try:
            check_node_name(node)
        except ValueError as exc:
            raise InputError(f"not asking a node agent: {exc}") from exc
        table = await self._current()
        host = table.get(node)
        if host is None:
            w = self._where
            what = (
                f"no Node {node!r}"
                if w.address == "internal_ip"
                else f"no Node {node!r} with a running agent pod ({w.selector} in {w.namespace})"
            )
            raise NotFoundError(f"cluster {w.cluster} has {what}; its agent is not contacted")
        return f"{self._where.scheme}://{host}:{self._where.port}"

    def forget(self) -> None:
        """Read the cluster again on the next call (an agent that moved, a refused call)."""
        self._read_at = None

    async def _current(self) -> dict[str, str]:
        async with self._lock:
            now = self._monotonic()
            if self._read_at is None or now - self._read_at >= self._where.cache_seconds:
                self._table = await self._read()
                self._read_at = now
            return self._table

    async def _read(self) -> dict[str, str]:
        w = self._where
        if w.address == "internal_ip":
            reported = await self._kube.node_internal_ips()
        else:
            nodes = {n.name for n in await self._kube.list_nodes()}
            pods = await self._kube.pod_ips_by_node(namespace=w.namespace, selector=w.selector)
            reported = {node: ip for node, ip in pods.items() if node in nodes}
        table: dict[str, str] = {}
        for node, text in reported.items():
            host = url_host(text)
            if host is None:
                log.warning(
                    "cluster %s reports %r for %s: not an IP address", w.cluster, text, node
                )
                continue
            table[node] = host
        return table


def url_host(text: str) -> str | None:
    """An IP address as it goes in a URL (IPv6 in brackets); None for anything else."""
    try:
        ip = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    return f"[{ip.compressed}]" if ip.version == 6 else ip.compressed
