"""HttpTokenReviewer: the agent's own minimal client for the TokenReview API (httpx).

The agent holds no Kubernetes client library: one POST to
/apis/authentication.k8s.io/v1/tokenreviews, as the agent's ServiceAccount (its token
re-read from the file on each call, since the kubelet rotates it), is all it needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from gpubot.domain.control.token_reviews import ReviewedToken, reviewed_from_status
from gpubot.errors import IdentityUnavailableError

REVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"


class HttpTokenReviewer:
    """ports.TokenReviewer over the API server's HTTPS endpoint."""

    def __init__(
        self,
        *,
        api_url: str,
        token_file: Path,
        ca_file: Path | None = None,
        timeout_s: float = 5.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._url = api_url.rstrip("/") + REVIEW_PATH
        self._token_file = token_file
        verify: bool | str = str(ca_file) if ca_file is not None else True
        self._client = httpx.AsyncClient(
            transport=transport,
            verify=verify,
            timeout=timeout_s,
            follow_redirects=False,
            trust_env=False,
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def review(self, *, token: str, audience: str) -> ReviewedToken:
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token, "audiences": [audience]},
        }
        try:
            own = self._token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise IdentityUnavailableError(
                f"TokenReview: cannot read the agent's own token {self._token_file}: {exc.strerror}"
            ) from exc
        try:
            response = await self._client.post(
                self._url, json=body, headers={"authorization": f"Bearer {own}"}
            )
        except httpx.HTTPError as exc:
            raise IdentityUnavailableError(f"TokenReview: {type(exc).__name__}: {exc}") from exc
        if response.status_code not in (200, 201):
            # 401/403 here is the agent's own account refused (no create tokenreviews).
            raise IdentityUnavailableError(
                f"TokenReview: the API server answered {response.status_code}"
                + (
                    " (the agent's ServiceAccount needs create tokenreviews)"
                    if response.status_code == 403
                    else ""
                )
            )
        try:
            data: Any = response.json()
        except ValueError as exc:
            raise IdentityUnavailableError("TokenReview: the answer is not JSON") from exc
        status = data.get("status") if isinstance(data, dict) else None
        return reviewed_from_status(status)
