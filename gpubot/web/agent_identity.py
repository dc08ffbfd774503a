"""Which node an agent speaks for: from its token, as the API server and the node agree.

Two modes, one per cluster. On Kubernetes (`serviceaccount`) an agent sends its projected
ServiceAccount token: the API server's TokenReview says whose it is and which pod it is bound
to, and the Pod, read from the API server, says which node. Off Kubernetes (`hmac`, e.g.
Slurm hosts) an agent holds its own node's token, derived from the bot's master secret.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from gpubot.domain.control.agent_tokens import TOKEN_HEX_LENGTH, token_scope
from gpubot.domain.control.token_reviews import ReviewCache, looks_like_jwt, service_account_user
from gpubot.domain.k8s_names import check_node_name
from gpubot.ports import PodPlacements, TokenReviewer


@dataclass(frozen=True)
class AgentIdentity:
    """The node a token speaks for (None in hmac mode: the body names it, the token must
    match), and the clusters it may post for (None: any)."""

    node: str | None
    clusters: Collection[str] | None


@dataclass(frozen=True)
class Unknown:
    """No identity: `status` 401 (not a token of any agent), 403, or 503 (ask again)."""

    status: int
    reason: str


@dataclass
class ServiceAccountAgents:
    """The agents of one Kubernetes cluster: pods of `service_account` in `namespace`,
    whose tokens were issued for `audience`."""

    cluster: str
    reviewer: TokenReviewer
    pods: PodPlacements
    audience: str
    namespace: str
    service_account: str
    cache_seconds: float = 10.0
    now: Callable[[], float] = time.monotonic
    _cache: ReviewCache[str | Unknown] = field(init=False)

    def __post_init__(self) -> None:
        self._cache = ReviewCache(now=self.now, ttl_s=self.cache_seconds)

    async def node_of(self, token: str) -> str | Unknown:
        """The node the token's pod is bound to; IdentityUnavailableError propagates."""
        return await self._cache.answer(token, lambda: self._node_of(token))

    async def _node_of(self, token: str) -> str | Unknown:
        review = await self.reviewer.review(token=token, audience=self.audience)
        if not review.authenticated:
            return Unknown(401, "the API server does not accept this token for " + self.audience)
        expected = service_account_user(namespace=self.namespace, name=self.service_account)
        if review.username != expected:
            return Unknown(403, f"{review.username[:120]} is not the agents' ServiceAccount")
        if self.audience not in review.audiences:
            return Unknown(401, f"the token is not for audience {self.audience}")
        if not review.pod_name or not review.pod_uid:
            return Unknown(403, "the token is bound to no pod; an agent's token is its pod's")
        pod = await self.pods.placement(namespace=self.namespace, name=review.pod_name)
        if pod is None or pod.uid != review.pod_uid:
            return Unknown(403, "the token's pod is gone or was replaced")
        if not pod.node:
            return Unknown(403, "the token's pod is bound to no node")
        return pod.node


@dataclass
class AgentEventAuth:
    """Who may post to /agent/events: a node's agent, for its own node only."""

    master: str | None = None  # hmac mode's master secret
    hmac_clusters: Collection[str] | None = None  # clusters whose agents use hmac (None: any)
    service_accounts: Sequence[ServiceAccountAgents] = ()

    async def identify(self, token: str) -> AgentIdentity | Unknown:
        if looks_like_jwt(token) and self.service_accounts:
            refusal = Unknown(401, "missing or wrong agent bearer token")
            for agents in self.service_accounts:
                answer = await agents.node_of(token)
                if isinstance(answer, str):
                    return AgentIdentity(node=answer, clusters=(agents.cluster,))
                if answer.status != 401:
                    refusal = answer
            return refusal
        if self.master is not None and len(token) == TOKEN_HEX_LENGTH:
            return AgentIdentity(node=None, clusters=self.hmac_clusters)
        return Unknown(401, "missing or wrong agent bearer token")

    def hmac_node_matches(self, *, token: str, node: str) -> bool:
        try:
            check_node_name(node)
        except ValueError:
            return False
        return self.master is not None and (
            token_scope(master=self.master, node=node, given=token) is not None
        )
