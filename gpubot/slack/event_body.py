"""What a /slack/events body must hold before bolt and the listeners read it.

Runs only after the signature holds (gpubot.slack.verify): this is the first parse. Bolt
reads the team, user and channel out of the body and raises on one it cannot read; its
action matchers and gpubot's listeners index the payload (`actions[0].action_id`,
`user.id`). A signed body that would break them gets a one-line 400 here instead of a 500
with a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from slack_bolt.request.async_request import AsyncBoltRequest

from gpubot.domain.validation_errors import first_problem


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class _User(_Open):
    id: str = Field(min_length=1)


class _Action(_Open):
    action_id: str
    value: Any = ""


class _BlockActions(_Open):
    """The fields of a button click that bolt's matchers and the listeners read."""

    user: _User
    actions: list[_Action] = Field(min_length=1)
    channel: dict[str, Any] | None = None
    container: dict[str, Any] | None = None
    message: dict[str, Any] | None = None


def unreadable_body(raw: bytes, headers: Mapping[str, str]) -> str | None:
    """Why this body cannot be handled (one line), or None."""
    read = read_payload(raw, headers)
    return read if isinstance(read, str) else None


def read_payload(raw: bytes, headers: Mapping[str, str]) -> dict[str, Any] | str:
    """The payload as bolt reads it, or why it cannot be handled (one line)."""
    try:
        body = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "not a Slack request: the body is not UTF-8"
    try:
        # What bolt does first: parse the body and read the team, user and channel out of it.
        payload: Any = AsyncBoltRequest(body=body, headers=dict(headers)).body
    except ValueError:
        return "not a Slack request: the body or its payload is not readable JSON"
    except Exception as exc:  # the edge: untrusted input into vendor parsing
        return f"not a Slack request: the body cannot be read ({type(exc).__name__})"
    if not isinstance(payload, dict):
        return "not a Slack request: the payload is not a JSON object"
    if payload.get("type") == "block_actions":
        try:
            _BlockActions.model_validate(payload)
        except ValidationError as exc:
            return first_problem(exc, prefix="block_actions payload: ")
    return payload
