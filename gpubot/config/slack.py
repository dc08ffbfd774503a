"""Settings for Slack: mode, channels, routes, the workspace and app it answers."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    Field,
    field_validator,
)

from gpubot.config.base import _Section


class SlackRoute(_Section):
    cluster: str | None = Field(None, description="cluster name; unset matches any")
    severity: str | None = Field(None, description="alert severity label; unset matches any")
    channel: str = Field(description="channel name or id for matching incidents")


class SlackSettings(_Section):
    mode: Literal["socket", "http", "off"] = Field(
        "socket", description="socket (no ingress), http, or off"
    )
    channel: str = Field("#gpu-incidents", description="default channel for incident threads")
    api_url: str = Field("https://slack.com/api/", description="Slack Web API base URL")
    routes: list[SlackRoute] = Field(
        default_factory=list,
        description="incident channel by cluster and severity; first match wins, else `channel`",
    )
    rate_per_second: float = Field(
        1.0, gt=0, description="outbound messages per second per channel (Slack allows ~1)"
    )
    usergroup_cache_seconds: float = Field(
        300.0, ge=0, description="how long user-group members from Slack are cached"
    )
    team_id: str | None = Field(
        None,
        pattern=r"^T[A-Z0-9]{2,31}$",
        description=(
            "the workspace's id (T…): a request from any other workspace is refused; "
            "required for slack.mode http"
        ),
    )
    enterprise_id: str | None = Field(
        None,
        pattern=r"^E[A-Z0-9]{2,31}$",
        description=(
            "the Enterprise Grid org's id (E…), when the workspace is in one; unset, a "
            "request that names an org is refused"
        ),
    )
    app_id: str | None = Field(
        None,
        pattern=r"^A[A-Z0-9]{2,31}$",
        description=(
            "the Slack app's id (A…): a request for any other app is refused; required for "
            "slack.mode http"
        ),
    )

    @field_validator("mode", mode="before")
    @classmethod
    def _yaml_boolean(cls, value: Any) -> Any:
        """YAML reads an unquoted `off` (or `no`, `false`) as false: that means "off". Its
        `on`/`yes`/`true` names no mode, so it is refused with the modes there are."""
        if value is False:
            return "off"
        if value is True:
            raise ValueError(
                "YAML reads on/yes/true as a boolean, which names no mode: "
                "write socket or http (or off)"
            )
        return value
