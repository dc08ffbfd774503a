"""The bot's tokens for the node agents on Kubernetes: one per node, from the TokenRequest API.

Each is for the audience `<audience>:<node>` and bound to the bot's pod, so the token one
agent receives opens no other agent (their audiences differ), and dies with the pod. A token
is reused until 80 % of its life, as the kubelet renews projected tokens.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

from gpubot.domain.control.token_reviews import node_audience
from gpubot.ports import TokenIssuer


def _utcnow() -> datetime:
    return datetime.now(UTC)


class PerNodeBotTokens:
    def __init__(
        self,
        issuer: TokenIssuer,
        *,
        namespace: str,
        service_account: str,
        audience: str,
        seconds: int = 600,
        pod: tuple[str, str] | None = None,
        now: Callable[[], datetime] = _utcnow,
    ) -> None:
        self._issuer = issuer
        self._namespace, self._account = namespace, service_account
        self._audience, self._seconds, self._pod = audience, seconds, pod
        self._now = now
        self._tokens: dict[str, tuple[str, datetime]] = {}  # node → (token, renew at)
        self._locks: dict[str, asyncio.Lock] = {}

    async def __call__(self, node: str) -> str:
        """`node`'s token; IdentityUnavailableError when the API server cannot issue one."""
        lock = self._locks.setdefault(node, asyncio.Lock())
        async with lock:  # one request per node at a time, not one per call
            held = self._tokens.get(node)
            now = self._now()
            if held is not None and now < held[1]:
                return held[0]
            issued = await self._issuer.issue(
                namespace=self._namespace,
                service_account=self._account,
                audience=node_audience(self._audience, node),
                seconds=self._seconds,
                pod=self._pod,
            )
            self._tokens[node] = (issued.token, now + (issued.expires_at - now) * 0.8)
            return issued.token
