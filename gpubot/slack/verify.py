"""Who may reach bolt: Slack's v0 signature, its 5-minute window, and each request once.

Everything here reads only two headers and the raw bytes: nothing parses the body before
the signature holds, so an unsigned body costs one HMAC over what the web layer's body cap
let through. A signed request is accepted once: the SHA-256 of its signature is recorded in
the store (shared by every replica) until its window is over.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

WINDOW_SECONDS = 300  # Slack's rule: a request older or newer than 5 minutes is refused
# Replicas' clocks drift a little: a digest is kept this much longer than its window.
_KEEP_EXTRA_SECONDS = 60
_TIMESTAMP = re.compile(r"[0-9]{1,12}")  # ASCII digits only: int() would take "²", " 1", "+1"
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")


class SeenRequests(Protocol):
    """The record of signed requests already accepted (SqlStore implements it)."""

    async def first_sight(self, digest: str, *, expires_at: datetime, now: datetime) -> bool:
        """Record `digest` until `expires_at`; True when it was not recorded already."""
        ...


class MemorySeenRequests:
    """SeenRequests in one process's memory: for tests, never shared between replicas."""

    def __init__(self) -> None:
        self.seen: dict[str, datetime] = {}

    async def first_sight(self, digest: str, *, expires_at: datetime, now: datetime) -> bool:
        self.seen = {d: at for d, at in self.seen.items() if at >= now}
        if digest in self.seen:
            return False
        self.seen[digest] = expires_at
        return True


@dataclass(frozen=True)
class Signed:
    """A request whose signature holds: what to remember it by, and until when."""

    digest: str
    expires_at: datetime
    now: datetime


class Refused(Exception):
    """The request is not Slack's, or not now: a one-line reason for a 401."""


class SlackVerifier:
    """Checks a /slack/events request against the signing secret and the clock."""

    def __init__(self, secret: str, *, now: Callable[[], float] = time.time) -> None:
        if not secret:
            raise ValueError("the Slack signing secret is empty")
        self._secret = secret.encode()
        self._now = now

    def check(self, body: bytes, headers: Mapping[str, str]) -> Signed:
        """The request, signed; Refused (with why, in one line) otherwise. Reads no body field."""
        stamp = headers.get("x-slack-request-timestamp", "")
        if not _TIMESTAMP.fullmatch(stamp):
            raise Refused("missing or malformed X-Slack-Request-Timestamp")
        now = self._now()
        if abs(now - int(stamp)) > WINDOW_SECONDS:
            raise Refused("X-Slack-Request-Timestamp is outside the 5-minute window")
        signature = headers.get("x-slack-signature", "")
        if not _SIGNATURE.fullmatch(signature):
            raise Refused("missing or malformed X-Slack-Signature")
        base = b"v0:" + stamp.encode() + b":" + body
        expected = "v0=" + hmac.new(self._secret, base, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, signature):
            raise Refused("the signature does not match")
        return Signed(
            digest=hashlib.sha256(signature.encode()).hexdigest(),
            expires_at=datetime.fromtimestamp(
                int(stamp) + WINDOW_SECONDS + _KEEP_EXTRA_SECONDS, UTC
            ),
            now=datetime.fromtimestamp(now, UTC),
        )
