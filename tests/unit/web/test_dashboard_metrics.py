"""The Grafana dashboard and gpubot's own alert rules use only metrics /metrics exports: after a
scenario (an XID incident waiting for approval, a refused request, an attempt-cap refusal)
every `gpubot_*` name in their queries is in the scrape, so they cannot drift apart."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_metrics_state import NODE, XID79, MakeBot, make_bot

from gpubot.backends.simulated import simulated_state
from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.errors import InputError

__all__ = ["make_bot"]  # the fixture, used by name

REPO = Path(__file__).resolve().parents[3]
DASHBOARD = REPO / "deploy" / "grafana" / "gpubot-dashboard.json"
RULES = REPO / "deploy" / "prometheus" / "gpubot-self-rules.yaml"
NAME = re.compile(r"\bgpubot_[a-z_]+\b")


def dashboard_queries() -> list[str]:
    board = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in board["panels"] for t in p.get("targets", [])]


def rule_queries() -> list[str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [r["expr"] for g in groups for r in g["rules"]]


def test_the_dashboard_is_a_grafana_dashboard() -> None:
    """uid, title, unique panel ids on the grid, each query with its refId and data source."""
    board: dict[str, Any] = json.loads(DASHBOARD.read_text())
    assert board["uid"] == "gpubot-self"
    assert board["title"]
    assert board["schemaVersion"] >= 36
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        assert set(panel["gridPos"]) == {"x", "y", "w", "h"}
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        for target in panel.get("targets", []):
            assert target["refId"]
            assert target["expr"]
            assert target["datasource"]["uid"] == "${datasource}"
    titles = " ".join(p["title"] for p in board["panels"]).lower()
    for topic in ("incidents", "runs", "approval", "held", "step outcomes", "slack", "leader"):
        assert topic in titles, topic


async def test_every_metric_the_dashboard_and_rules_use_is_exported(make_bot: MakeBot) -> None:
    """Every gpubot_* name in a dashboard or rule query is a sample name of the scrape."""
    bot = await make_bot(webhook_token="tok-123456", attempts={"max_attempts": 1})
    inject_xid(simulated_state(bot.app.clusters["sim"]), node=NODE, gpu=3)
    await bot.post(XID79, authorization="Bearer tok-123456")
    await bot.post(XID79)  # refused: no token
    with pytest.raises(InputError, match="attempt cap"):  # refused, and counted
        await bot.app.service.start_command_run(
            runbook="xid79", args={"node": NODE}, requested_by="U1", cluster="sim"
        )
    exported = {name for name, _labels in await bot.metrics()}

    queries = dashboard_queries() + rule_queries()
    used = {name for q in queries for name in NAME.findall(q)}

    assert len(used) >= 15
    assert used - exported == set()
    assert all(NAME.search(q) for q in rule_queries())
