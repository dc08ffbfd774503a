"""Every team, org and app id a verified Slack payload carries must be the configured one."""

from __future__ import annotations

from typing import Any

import pytest

from gpubot.slack.workspace import Workspace, foreign

HERE = Workspace(team_id="T0001", app_id="A0001")
GRID = Workspace(team_id="T0001", enterprise_id="E0001", app_id="A0001")
SLASH = {"team_id": "T0001", "api_app_id": "A0001", "command": "/gpu", "user_id": "U1"}
CLICK = {
    "type": "block_actions",
    "team": {"id": "T0001"},
    "user": {"id": "U1", "team_id": "T0001"},
    "api_app_id": "A0001",
}
EVENT = {
    "type": "event_callback",
    "team_id": "T0001",
    "api_app_id": "A0001",
    "authorizations": [{"team_id": "T0001", "enterprise_id": None}],
}


@pytest.mark.parametrize("payload", [SLASH, CLICK, EVENT])
def test_the_configured_workspace_passes(payload: dict[str, Any]) -> None:
    assert foreign(payload, HERE) is None


@pytest.mark.parametrize(
    ("workspace", "payload", "field"),
    [
        (HERE, {**SLASH, "team_id": "T0OTHER"}, "team"),
        (HERE, {**SLASH, "api_app_id": "A0OTHER"}, "app"),
        (HERE, {k: v for k, v in SLASH.items() if k != "api_app_id"}, "app"),
        (HERE, {k: v for k, v in SLASH.items() if k != "team_id"}, "team"),
        (HERE, {**SLASH, "enterprise_id": "E0001"}, "enterprise"),  # unset: no org expected
        (HERE, {**CLICK, "team": {"id": "T0OTHER"}}, "team"),
        (HERE, {**CLICK, "user": {"id": "U1", "team_id": "T0OTHER"}}, "team"),
        (HERE, {**CLICK, "team": "T0001\n"}, "team"),
        (HERE, {**CLICK, "enterprise": {"id": "E0OTHER"}}, "enterprise"),
        (HERE, {**EVENT, "authorizations": [{"team_id": "T0OTHER"}]}, "team"),
        (GRID, SLASH, "enterprise"),  # set: the org must be named
        (GRID, {**SLASH, "enterprise_id": "E0OTHER"}, "enterprise"),
    ],
)
def test_anything_else_is_refused_with_the_field(
    workspace: Workspace, payload: dict[str, Any], field: str
) -> None:
    found = foreign(payload, workspace)
    assert found is not None
    assert found.field == field
    assert "\n" not in found.reason


def test_an_org_workspace_with_its_org_passes() -> None:
    assert foreign({**SLASH, "enterprise_id": "E0001"}, GRID) is None
    assert foreign({**CLICK, "enterprise": {"id": "E0001"}}, GRID) is None


def test_slacks_handshakes_pass_and_unset_ids_check_nothing() -> None:
    assert foreign({"type": "url_verification", "challenge": "c"}, HERE) is None
    assert foreign({"ssl_check": "1", "token": "t"}, HERE) is None
    assert foreign({**SLASH, "team_id": "T0OTHER", "api_app_id": "A9"}, Workspace()) is None
