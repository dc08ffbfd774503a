"""KubeTokenReviewer: TokenReview, TokenRequest and Pod reads on the official client, in
threads.

The bot's side of agent identity on Kubernetes: who a token is (TokenReview with the
agents' audience), where the pod it is bound to runs (the Pod, read from the API), and the
bot's own token for one node's agent (TokenRequest).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from gpubot.domain.control.token_reviews import ReviewedToken, reviewed_from_status
from gpubot.errors import IdentityUnavailableError
from gpubot.ports import IssuedToken, PodPlacement

_TIMEOUT_S = 5.0


class KubeTokenReviewer:
    """ports.TokenReviewer, TokenIssuer and PodPlacements for one cluster's API server."""

    def __init__(self, api: client.ApiClient) -> None:
        self._auth = client.AuthenticationV1Api(api)
        self._core = client.CoreV1Api(api)

    async def review(self, *, token: str, audience: str) -> ReviewedToken:
        body = client.V1TokenReview(
            api_version="authentication.k8s.io/v1",
            kind="TokenReview",
            spec=client.V1TokenReviewSpec(token=token, audiences=[audience]),
        )
        try:
            answer: Any = await asyncio.to_thread(
                self._auth.create_token_review, body, _request_timeout=_TIMEOUT_S
            )
        except ApiException as exc:
            raise IdentityUnavailableError(
                f"TokenReview: the API server answered {exc.status} {exc.reason}"
            ) from exc
        except (HTTPError, OSError) as exc:
            raise IdentityUnavailableError(f"TokenReview: {type(exc).__name__}") from exc
        status = answer.status.to_dict() if answer.status is not None else None
        return reviewed_from_status(status)

    async def placement(self, *, namespace: str, name: str) -> PodPlacement | None:
        try:
            pod: Any = await asyncio.to_thread(
                self._core.read_namespaced_pod, name, namespace, _request_timeout=_TIMEOUT_S
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise IdentityUnavailableError(
                f"Pod read: the API server answered {exc.status} {exc.reason}"
            ) from exc
        except (HTTPError, OSError) as exc:
            raise IdentityUnavailableError(f"Pod read: {type(exc).__name__}") from exc
        return PodPlacement(uid=str(pod.metadata.uid or ""), node=pod.spec.node_name or None)

    async def issue(
        self,
        *,
        namespace: str,
        service_account: str,
        audience: str,
        seconds: int,
        pod: tuple[str, str] | None = None,
    ) -> IssuedToken:
        bound = (
            client.V1BoundObjectReference(api_version="v1", kind="Pod", name=pod[0], uid=pod[1])
            if pod is not None
            else None
        )
        request = client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(
                audiences=[audience], expiration_seconds=int(seconds), bound_object_ref=bound
            )
        )
        try:
            made: Any = await asyncio.to_thread(
                self._core.create_namespaced_service_account_token,
                service_account,
                namespace,
                request,
                _request_timeout=_TIMEOUT_S,
            )
        except ApiException as exc:
            raise IdentityUnavailableError(
                f"TokenRequest for {namespace}/{service_account}: the API server answered "
                f"{exc.status} {exc.reason}"
            ) from exc
        except (HTTPError, OSError) as exc:
            raise IdentityUnavailableError(f"TokenRequest: {type(exc).__name__}") from exc
        status = made.status
        expires = status.expiration_timestamp if status is not None else None
        if not isinstance(expires, datetime):
            expires = datetime.now(UTC) + timedelta(seconds=seconds)
        return IssuedToken(token=str(status.token), expires_at=expires)
