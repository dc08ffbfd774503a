"""Per-node agent credentials: each node's token is derived from the bot's master secret."""

from __future__ import annotations

import hashlib
import hmac
from typing import Literal

from gpubot.domain.k8s_names import check_node_name

Scope = Literal["read", "mutate"]
SCOPES: tuple[Scope, ...] = ("read", "mutate")
_STRONGEST_FIRST: tuple[Scope, ...] = ("mutate", "read")
TOKEN_HEX_LENGTH = 64  # HMAC-SHA256, hex


def node_token(*, master: str, node: str, scope: Scope) -> str:
    """HMAC-SHA256(master, "gpubot-agent:{scope}:{node}") in hex.

    The bot holds `master` and derives any node's token; an agent holds only its own node's,
    so a token taken from one node's agent opens that node's agent and nothing else.
    """
    if not master:
        raise ValueError("the agent master secret is empty")
    if scope not in SCOPES:
        raise ValueError(f"unknown agent token scope {scope!r}")
    check_node_name(node)
    message = f"gpubot-agent:{scope}:{node}".encode()
    return hmac.new(master.encode(), message, hashlib.sha256).hexdigest()


def bearer(authorization: str) -> str | None:
    """The token of an `Authorization: Bearer …` header, or None for any other shape."""
    scheme, _, given = authorization.partition(" ")
    token = given.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def same_token(given: str, expected: str) -> bool:
    """Constant-time comparison of two tokens."""
    return hmac.compare_digest(given.encode(), expected.encode())


def token_scope(*, master: str, node: str, given: str) -> Scope | None:
    """Which of `node`'s tokens `given` is (mutate first), or None when it is neither."""
    for scope in _STRONGEST_FIRST:
        if same_token(given, node_token(master=master, node=node, scope=scope)):
            return scope
    return None
