"""ServiceAccount identities from TokenReview answers, and a short cache of them."""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

V = TypeVar("V")
# What the API server puts in a bound token's user extra (kubernetes/pkg/serviceaccount).
POD_NAME_EXTRA = "authentication.kubernetes.io/pod-name"
POD_UID_EXTRA = "authentication.kubernetes.io/pod-uid"
# A JWT is three base64url parts; anything else is no ServiceAccount token (checked before
# any request leaves for the API server, so junk costs nothing).
_JWT = re.compile(r"[A-Za-z0-9_-]{8,4096}\.[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{8,4096}", re.ASCII)
_SA_USER = re.compile(r"system:serviceaccount:([a-z0-9-]{1,63}):([a-z0-9.-]{1,253})", re.ASCII)


def looks_like_jwt(token: str) -> bool:
    return len(token) <= 16384 and _JWT.fullmatch(token) is not None


def node_audience(audience: str, node: str) -> str:
    """The audience of a token the bot requests for one node's agent: no other agent's."""
    return f"{audience}:{node}"


def service_account_user(*, namespace: str, name: str) -> str:
    """The username the API server gives a ServiceAccount's tokens."""
    return f"system:serviceaccount:{namespace}:{name}"


@dataclass(frozen=True)
class ReviewedToken:
    """What a TokenReview said about one token (status.authenticated and status.user)."""

    authenticated: bool
    username: str = ""
    pod_name: str | None = None
    pod_uid: str | None = None
    audiences: tuple[str, ...] = ()
    error: str = ""

    @property
    def service_account(self) -> tuple[str, str] | None:
        """(namespace, name) when the token is a ServiceAccount's."""
        found = _SA_USER.fullmatch(self.username)
        return (found.group(1), found.group(2)) if found else None


def reviewed_from_status(status: Mapping[str, Any] | None) -> ReviewedToken:
    """A TokenReview's `status` (JSON) as a ReviewedToken; anything odd is not authenticated."""
    if not isinstance(status, Mapping) or status.get("authenticated") is not True:
        error = status.get("error") if isinstance(status, Mapping) else None
        return ReviewedToken(authenticated=False, error=str(error or "not authenticated")[:200])
    user = status.get("user")
    user = user if isinstance(user, Mapping) else {}
    extra = user.get("extra")
    extra = extra if isinstance(extra, Mapping) else {}
    audiences = status.get("audiences")
    return ReviewedToken(
        authenticated=True,
        username=str(user.get("username") or ""),
        pod_name=_single(extra.get(POD_NAME_EXTRA)),
        pod_uid=_single(extra.get(POD_UID_EXTRA)),
        audiences=tuple(str(a) for a in audiences) if isinstance(audiences, list) else (),
    )


def _single(values: Any) -> str | None:
    """A user extra holds a list of strings; only exactly one value names a pod."""
    if isinstance(values, Sequence) and not isinstance(values, str) and len(values) == 1:
        return str(values[0])
    return None


def token_key(token: str) -> str:
    """The cache key of a token: its SHA-256, so the cache never holds a credential."""
    return hashlib.sha256(token.encode()).hexdigest()


class ReviewCache(Generic[V]):
    """The last answers about tokens, for `ttl_s` each and at most `size` of them.

    Keyed by the token's hash. The kubelet rotates projected tokens and the API server may
    revoke one (its pod deleted), so an answer is kept only briefly; `now` is injected so
    the expiry is tested on a fake clock.
    """

    def __init__(
        self,
        *,
        now: Callable[[], float],
        ttl_s: float = 10.0,
        size: int = 1024,
        in_flight: int = 8,
    ) -> None:
        self._now, self._ttl, self._size = now, ttl_s, size
        self._entries: OrderedDict[str, tuple[float, V]] = OrderedDict()
        self._reviewing = asyncio.Semaphore(in_flight)

    def get(self, token: str) -> V | None:
        key = token_key(token)
        entry = self._entries.get(key)
        if entry is None:
            return None
        if self._now() >= entry[0]:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def put(self, token: str, value: V) -> None:
        if self._ttl <= 0:
            return
        key = token_key(token)
        self._entries[key] = (self._now() + self._ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    async def answer(self, token: str, ask: Callable[[], Awaitable[V]]) -> V:
        """The cached answer about `token`, else `ask()`'s (cached). At most `in_flight`
        reviews run at once: tokens never seen before (junk included) cost the API server
        one review each, so their rate is bounded here, not by the sender."""
        cached = self.get(token)
        if cached is not None:
            return cached
        async with self._reviewing:
            cached = self.get(token)  # another request may have asked meanwhile
            if cached is not None:
                return cached
            value = await ask()
        self.put(token, value)
        return value
