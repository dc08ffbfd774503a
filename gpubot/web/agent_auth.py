"""Who may post agent events: a node's agent, for its own node only."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from gpubot.domain.agent_tokens import TOKEN_HEX_LENGTH, bearer, token_scope
from gpubot.domain.alerts import NODE_LABELS  # every label the bot reads a node from
from gpubot.domain.names import check_node_name


async def agent_event_refusal(request: Request, *, master: str | None) -> JSONResponse | None:
    """None when every alert in the body names the node whose token signed the request.

    An agent holds only its own node's tokens (derived from the bot's `master`), so a body
    that names any other node, or no node, is refused whole (403) and nothing is stored.
    """
    given = bearer(request.headers.get("authorization", ""))
    # The token's shape is checked before the body is read: pre-authentication work is small.
    if master is None or given is None or len(given) != TOKEN_HEX_LENGTH:
        return _refuse(401, "missing or wrong agent bearer token")
    try:
        nodes = event_nodes(await request.body())
    except ValueError as exc:
        return _refuse(400, str(exc))
    if not nodes:
        return _refuse(403, "the events name no node; an agent posts only for its own node")
    for node in sorted(nodes):
        if token_scope(master=master, node=node, given=given) is None:
            return _refuse(403, f"this token is not node {node}'s; nothing was stored")
    return None


def event_nodes(body: bytes) -> set[str]:
    """Every node named by an alert in an Alertmanager-shaped body; ValueError when an alert
    names none, or a name that is not a node name."""
    try:
        data: Any = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise ValueError("malformed JSON") from exc
    alerts = data.get("alerts") if isinstance(data, dict) else None
    if not isinstance(alerts, list):
        raise ValueError("alerts: expected a list")
    nodes: set[str] = set()
    for i, alert in enumerate(alerts):
        labels = alert.get("labels") if isinstance(alert, dict) else None
        if not isinstance(labels, dict):
            raise ValueError(f"alerts.{i}.labels: expected a mapping")
        named = [labels[key] for key in NODE_LABELS if key in labels]
        if not named:
            raise ValueError(f"alerts.{i}: names no node ({', '.join(NODE_LABELS)} label)")
        for value in named:
            if not isinstance(value, str):
                raise ValueError(f"alerts.{i}.labels: a node name must be a string")
            try:
                nodes.add(check_node_name(value))
            except ValueError as exc:
                raise ValueError(f"alerts.{i}.labels: {exc}") from exc
    return nodes


def _refuse(code: int, reason: str) -> JSONResponse:
    return JSONResponse({"error": reason}, status_code=code)
