"""Which Slack workspace, org and app gpubot answers: a request naming any other is refused.

The signing secret proves a request came from Slack for some app that holds it; it does not
say for which workspace. Every team id, enterprise id and app id the payload carries (a
slash command's form fields, a click's `team`, `user` and `enterprise`, an event's
`authorizations`) must be the configured one, before any listener reads the request as a
command. Slack's own handshakes (`url_verification`, `ssl_check`) change nothing and carry
no team, so they pass.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.response import BoltResponse

from gpubot.config import SlackSettings

log = logging.getLogger(__name__)
_ID = re.compile(r"[A-Z0-9]{1,32}")
NOT_HERE = "This gpubot serves another Slack workspace or app; nothing was done."

OnForeign = Callable[[str], None]  # told the field ("team", "enterprise", "app") refused


@dataclass(frozen=True)
class Workspace:
    """The configured ids; an unset team id (Socket Mode only) checks no team or org."""

    team_id: str | None = None
    enterprise_id: str | None = None
    app_id: str | None = None

    @classmethod
    def of(cls, slack: SlackSettings) -> Workspace:
        return cls(team_id=slack.team_id, enterprise_id=slack.enterprise_id, app_id=slack.app_id)


@dataclass(frozen=True)
class Foreign:
    """Why a request is not for this workspace: the field, and one line."""

    field: str
    reason: str


def _shown(value: object) -> str:
    """An id as the log may show it: Slack's ids are short upper-case ASCII."""
    return f"'{value}'" if isinstance(value, str) and _ID.fullmatch(value) else "a malformed id"


def _dicts(payload: Mapping[str, Any], *keys: str) -> Iterator[Mapping[str, Any]]:
    """The payload itself and the objects (or lists of objects) under `keys`."""
    yield payload
    for key in keys:
        value = payload.get(key)
        if isinstance(value, Mapping):
            yield value
        elif isinstance(value, list):
            yield from (v for v in value if isinstance(v, Mapping))


def _team_ids(payload: Mapping[str, Any]) -> list[object]:
    found = [part.get("team_id") for part in _dicts(payload, "user", "authorizations")]
    team = payload.get("team")
    if isinstance(team, Mapping):
        found.append(team.get("id"))
    elif team is not None:
        found.append(team)
    return [t for t in found if t is not None]


def _enterprise_ids(payload: Mapping[str, Any]) -> list[object]:
    found = [p.get("enterprise_id") for p in _dicts(payload, "user", "team", "authorizations")]
    enterprise = payload.get("enterprise")
    if isinstance(enterprise, Mapping):
        found.append(enterprise.get("id"))
    elif enterprise is not None:
        found.append(enterprise)
    return [e for e in found if e not in (None, "")]


def foreign(payload: Mapping[str, Any], workspace: Workspace) -> Foreign | None:
    """Why `payload` (a verified request, parsed) is not for this workspace; None if it is."""
    if payload.get("type") == "url_verification" or payload.get("ssl_check") is not None:
        return None
    if workspace.app_id is not None:
        app = payload.get("api_app_id")
        if app != workspace.app_id:
            return Foreign("app", f"api_app_id {_shown(app)} is not slack.app_id")
    if workspace.team_id is None:
        return None
    teams = _team_ids(payload)
    if not teams:
        return Foreign("team", "the request names no team")
    for team in teams:
        if team != workspace.team_id:
            return Foreign("team", f"team {_shown(team)} is not slack.team_id")
    enterprises = _enterprise_ids(payload)
    if workspace.enterprise_id is not None and not enterprises:
        return Foreign("enterprise", "the request names no enterprise")
    for enterprise in enterprises:
        if enterprise != workspace.enterprise_id:
            where = (
                "slack.enterprise_id" if workspace.enterprise_id else "unset slack.enterprise_id"
            )
            return Foreign("enterprise", f"enterprise {_shown(enterprise)} is not {where}")
    return None


def refusal(payload: Mapping[str, Any], found: Foreign) -> BoltResponse:
    """A slash command shows its answer's body: an ephemeral line; anything else gets 403."""
    if payload.get("command"):
        body = json.dumps({"response_type": "ephemeral", "text": NOT_HERE})
        return BoltResponse(status=200, body=body, headers={"content-type": "application/json"})
    body = json.dumps({"error": f"not this workspace: {found.reason}"})
    return BoltResponse(status=403, body=body, headers={"content-type": "application/json"})


def refused(found: Foreign, on_foreign: OnForeign | None) -> None:
    """Log and count one refusal."""
    if on_foreign is not None:
        on_foreign(found.field)
    log.warning(
        "slack: refused a signed request for another workspace: %s",
        found.reason,
        extra={"event": "slack.foreign", "reason": found.reason},
    )


def guard(app: AsyncApp, workspace: Workspace, on_foreign: OnForeign | None = None) -> None:
    """Check every request bolt dispatches (HTTP and Socket Mode alike) before any listener."""

    @app.middleware
    async def same_workspace(
        body: dict[str, Any], next: Callable[[], Awaitable[None]]
    ) -> BoltResponse | None:
        found = foreign(body, workspace)
        if found is None:
            await next()
            return None
        refused(found, on_foreign)
        return refusal(body, found)
