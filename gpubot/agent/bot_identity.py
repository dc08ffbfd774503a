"""Who may call the agent on Kubernetes: the bot's ServiceAccount, known by TokenReview.

The bot sends its projected ServiceAccount token (audience `audience`); the agent asks the
API server whose it is. Reads and actions are the bot's alone: any other account, however
valid its token, is refused (403), and a token the API server does not accept is 401.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gpubot.domain.control.agent_tokens import Scope
from gpubot.domain.control.token_reviews import ReviewCache, looks_like_jwt
from gpubot.ports import TokenReviewer

_OK = (200, "")  # the cached answer for the bot's token


@dataclass
class BotServiceAccount:
    """The agent's Callers on Kubernetes: `username` is system:serviceaccount:<ns>:<bot sa>."""

    reviewer: TokenReviewer
    audience: str
    username: str
    cache_seconds: float = 10.0
    read_only: bool = False  # agent.read_only: every action is 403, even for the bot
    now: Callable[[], float] = time.monotonic
    _cache: ReviewCache[tuple[int, str]] = field(init=False)

    def __post_init__(self) -> None:
        self._cache = ReviewCache(now=self.now, ttl_s=self.cache_seconds)

    async def authorize(self, token: str, *, needs: Scope) -> tuple[int, str] | None:
        # Reads and actions alike: the bot is the only caller an agent has.
        if not looks_like_jwt(token):
            return 401, "missing or wrong bearer token"
        answer = await self._cache.answer(token, lambda: self._ok_or_refusal(token))
        if answer != _OK:
            return answer
        if needs == "mutate" and self.read_only:
            return 403, "this agent is read-only (agent.read_only)"
        return None

    async def _ok_or_refusal(self, token: str) -> tuple[int, str]:
        return await self._review(token) or _OK

    async def _review(self, token: str) -> tuple[int, str] | None:
        review = await self.reviewer.review(token=token, audience=self.audience)
        if not review.authenticated or self.audience not in review.audiences:
            return 401, f"the API server does not accept this token for {self.audience}"
        if review.username != self.username:
            return 403, f"{review.username[:120]} may not call the agent; only {self.username}"
        return None
