"""Who may post agent events: a node's agent, XID alerts of its own node's GPUs only."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import JSONResponse

from gpubot.domain.control.agent_tokens import bearer
from gpubot.domain.incidents.agent_events import check_agent_events
from gpubot.errors import IdentityUnavailableError
from gpubot.web.agent_identity import AgentEventAuth, Unknown

log = logging.getLogger(__name__)
Refused = Callable[[str], None]  # counts a refusal by kind (gpubot_agent_event_refusals)


async def agent_event_refusal(
    request: Request, *, auth: AgentEventAuth, refused: Refused | None = None
) -> JSONResponse | None:
    """None when the token is a node agent's and every alert in the body is an XID alert
    of that node, in a cluster it speaks for; else the answer (4xx, or 503 when the API
    server cannot say who the token is). A refused body is refused whole: nothing is stored.
    """

    def refuse(code: int, kind: str, reason: str) -> JSONResponse:
        if refused is not None:
            refused(kind)
        return JSONResponse({"error": reason}, status_code=code)

    given = bearer(request.headers.get("authorization", ""))
    if given is None:
        return refuse(401, "unauthenticated", "missing or wrong agent bearer token")
    try:
        # The token is judged before the body is read: pre-authentication work is small.
        identity = await auth.identify(given)
    except IdentityUnavailableError as exc:
        log.warning("agent event: %s", exc, extra={"event": "agent.identity_unavailable"})
        return refuse(503, "identity_unavailable", "cannot check the agent's token now; retry")
    if isinstance(identity, Unknown):
        kind = "unauthenticated" if identity.status == 401 else "not_an_agent"
        return refuse(identity.status, kind, identity.reason)
    body = await request.body()
    node = identity.node
    if node is None:  # hmac: the token must be the node's that the body names
        named = _first_hostname(body)
        matches = named is not None and auth.hmac_node_matches(token=given, node=named)
        # A name no Hostname can have: the check below then says what is wrong with the body.
        node = named if matches and named is not None else "\x00"
    problem = check_agent_events(body, node=node, clusters=identity.clusters)
    if problem is not None:
        return refuse(problem.status, problem.kind, problem.reason)
    if node == "\x00":
        return refuse(403, "other_node", "this token is no agent's of the node named")
    return None


def _first_hostname(body: bytes) -> str | None:
    try:
        data = json.loads(body)
        value = data["alerts"][0]["labels"]["Hostname"]
    except (ValueError, RecursionError, LookupError, TypeError):
        return None
    return value if isinstance(value, str) else None
