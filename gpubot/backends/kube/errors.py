"""ApiException → gpubot error kinds: what the executor retries, what a human must fix."""

from __future__ import annotations

import json
import re
from typing import Any

from kubernetes.client.exceptions import ApiException

from gpubot.errors import (
    ConflictError,
    DisruptionBlockedError,
    GpubotError,
    NotFoundError,
    PermanentStepError,
    TemporaryStepError,
)

# The eviction subresource names the budget in its cause, e.g.
# "The disruption budget train-pdb needs 2 healthy pods and has 2 currently".
_BUDGET = re.compile(r"disruption budget (\S+)")


def status_message(exc: ApiException) -> str:
    """The `message` of the Status body the API server sends with every error."""
    body = _status(exc)
    return str(body.get("message") or exc.reason or f"HTTP {exc.status}")


def _status(exc: ApiException) -> dict[str, Any]:
    try:
        body = json.loads(exc.body or "")
    except (TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def retry_after(exc: ApiException, default: float) -> float:
    headers = exc.headers or {}
    try:
        return float(headers.get("Retry-After", default))
    except (TypeError, ValueError):
        return default


def budget_of(exc: ApiException) -> str:
    """The PDB named in a 429 from the eviction subresource ('' if it names none)."""
    status = _status(exc)
    causes = (status.get("details") or {}).get("causes") or []
    texts = [str(c.get("message", "")) for c in causes if isinstance(c, dict)]
    for text in [*texts, str(status.get("message", ""))]:
        if match := _BUDGET.search(text):
            return match.group(1)
    return ""


def translate(exc: ApiException, *, verb: str, resource: str) -> GpubotError:
    """One error kind per status code; `verb resource` is what the bot was doing (RBAC terms)."""
    code = int(exc.status or 0)
    message = status_message(exc)
    what = f"{verb} {resource}"
    if code == 404:
        return NotFoundError(f"{resource} not found: {message}")
    if code in (401, 403):
        return PermanentStepError(
            f"RBAC: the bot's service account may not {what} "
            f"(add verb {verb!r} to its ClusterRole): {message}"
        )
    if code == 409:
        return ConflictError(f"conflict on {what}, will retry: {message}", delay=1.0)
    if code == 429:
        return TemporaryStepError(
            f"API server throttled {what}: {message}", delay=retry_after(exc, 5.0)
        )
    if code >= 500 or code == 0:
        return TemporaryStepError(f"API server error on {what} ({code}): {message}", delay=5.0)
    return PermanentStepError(f"API server refused {what} ({code}): {message}")


def eviction_error(exc: ApiException, *, namespace: str, name: str) -> GpubotError:
    """A 429 from pods/eviction is a PodDisruptionBudget saying no, not throttling."""
    if exc.status == 429:
        budget = budget_of(exc)
        return DisruptionBlockedError(
            f"evicting {namespace}/{name} would violate PodDisruptionBudget "
            f"{namespace}/{budget or '?'}: {status_message(exc)}",
            budget=budget,
        )
    return translate(exc, verb="create", resource=f"pods/eviction {namespace}/{name}")
