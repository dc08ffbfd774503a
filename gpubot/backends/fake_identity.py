"""FakeTokenReviews: the API server's TokenReview, TokenRequest and Pod reads, in memory."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from gpubot.domain.control.token_reviews import ReviewedToken, service_account_user
from gpubot.errors import IdentityUnavailableError
from gpubot.ports import IssuedToken, PodPlacement


@dataclass
class FakeTokenReviews:
    """Issues bound tokens as the API server does and answers reviews of them.

    `mint` makes a token for a ServiceAccount bound to a pod (a test's setup); `issue` is
    the TokenRequest port; `pods` is what a Pod read answers; `down` makes every call fail
    as an unreachable API server does.
    """

    tokens: dict[str, ReviewedToken] = field(default_factory=dict)
    pods: dict[tuple[str, str], PodPlacement] = field(default_factory=dict)
    down: bool = False
    reviews: int = 0
    pod_reads: int = 0
    issued: list[tuple[str, str, str, int, tuple[str, str] | None]] = field(default_factory=list)
    now: datetime = datetime(2026, 11, 28, tzinfo=UTC)

    def mint(
        self,
        *,
        namespace: str,
        service_account: str,
        audience: str,
        pod: str | None = None,
        node: str | None = None,
        uid: str | None = None,
    ) -> str:
        """A new token (JWT-shaped); with `pod`, bound to that pod, which runs on `node`."""
        n = len(self.tokens) + 1
        token = f"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ0ZXN0{n:08d}.c2lnbmF0dXJlX{n:08d}"
        pod_uid = uid or (f"uid-{pod}-{n}" if pod else None)
        self.tokens[token] = ReviewedToken(
            authenticated=True,
            username=service_account_user(namespace=namespace, name=service_account),
            pod_name=pod,
            pod_uid=pod_uid,
            audiences=(audience,),
        )
        if pod is not None and pod_uid is not None and (namespace, pod) not in self.pods:
            self.pods[(namespace, pod)] = PodPlacement(uid=pod_uid, node=node)
        return token

    async def issue(
        self,
        *,
        namespace: str,
        service_account: str,
        audience: str,
        seconds: int,
        pod: tuple[str, str] | None = None,
    ) -> IssuedToken:
        if self.down:
            raise IdentityUnavailableError("TokenRequest: the API server is unreachable")
        self.issued.append((namespace, service_account, audience, seconds, pod))
        token = self.mint(
            namespace=namespace,
            service_account=service_account,
            audience=audience,
            pod=pod[0] if pod else None,
            uid=pod[1] if pod else None,
        )
        return IssuedToken(token=token, expires_at=self.now + timedelta(seconds=seconds))

    async def review(self, *, token: str, audience: str) -> ReviewedToken:
        self.reviews += 1
        if self.down:
            raise IdentityUnavailableError("TokenReview: the API server is unreachable")
        found = self.tokens.get(token)
        if found is None or audience not in found.audiences:
            # The API server refuses a token whose audiences do not meet the review's.
            return ReviewedToken(authenticated=False, error="invalid bearer token")
        return found

    async def placement(self, *, namespace: str, name: str) -> PodPlacement | None:
        self.pod_reads += 1
        if self.down:
            raise IdentityUnavailableError("Pod read: the API server is unreachable")
        return self.pods.get((namespace, name))
