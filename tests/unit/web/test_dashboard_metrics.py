"""The Grafana dashboard and gpubot's own alert rules use only metrics /metrics exports: after a
scenario (an XID incident whose drain is denied, a refused request, an attempt-cap refusal)
every `gpubot_*` name in their queries is in the scrape, so they cannot drift apart."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_metrics_state import NODE, XID79, MakeBot, make_bot

from gpubot.backends.simulated import simulated_state
from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.errors import InputError
from gpubot.web.metrics import StateCollector, Watched

__all__ = ["make_bot"]  # the fixture, used by name

REPO = Path(__file__).resolve().parents[3]
DASHBOARD = REPO / "deploy" / "grafana" / "gpubot-dashboard.json"
RULES = REPO / "deploy" / "prometheus" / "gpubot-self-rules.yaml"
AGENT_RULES = REPO / "deploy" / "prometheus" / "gpubot-agent-rules.yaml"
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
    topics = ("incidents", "runs", "approval", "held", "step outcomes", "slack", "leader")
    for topic in (*topics, "step duration", "approval latency", "dependency", "versions"):
        assert topic in titles, topic


def test_every_dashboard_query_is_scoped_by_the_cluster_and_job_variables() -> None:
    """The board has `cluster` and `job` variables (read from gpubot_build_info, All as
    `.*`), and every gpubot_* series of every panel's query is selected by both."""
    board: dict[str, Any] = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in board["templating"]["list"]}
    for name in ("cluster", "job"):
        assert variables[name]["type"] == "query"
        assert "gpubot_build_info" in variables[name]["definition"]
        assert variables[name]["includeAll"]
        assert variables[name]["allValue"] == ".*"
    selectors = re.compile(r"\bgpubot_[a-z_]+(\{[^}]*\})?")
    for query in dashboard_queries():
        for match in selectors.finditer(query):
            assert match.group(1), query
            assert 'cluster=~"$cluster"' in match.group(1), query
            assert 'job=~"$job"' in match.group(1), query


def test_every_self_alert_links_its_section_of_the_alerts_page() -> None:
    """Every rule on gpubot and on its agents has annotations.runbook_url: docs_base_url
    (pyproject.toml, defined once) + /docs/reference/alerts.md#<alert name in lower case>,
    and that page has the section the anchor names."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    base = pyproject["tool"]["gpubot"]["docs_base_url"]
    page = (REPO / "docs" / "reference" / "alerts.md").read_text(encoding="utf-8")
    alerts = 0
    for path in (RULES, AGENT_RULES):
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                url = f"{base}/docs/reference/alerts.md#{rule['alert'].lower()}"
                assert rule["annotations"]["runbook_url"] == url, rule["alert"]
                assert f"\n### {rule['alert']}\n" in page, rule["alert"]
                alerts += 1
    assert alerts == 14


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
    (run,) = await bot.app.store.list_runs()
    (request,) = await bot.app.store.approvals_for(run.id)
    await bot.app.service.vote(approval_id=request.id, user="U1", decision="deny")
    await bot.app.service.wait_idle()
    exported = {name for name, _labels in await bot.metrics()}
    # What only a replica that executes by shard exports (leader_election.shards).
    alone = {m.name for m in StateCollector(Watched()).collect()}
    sharded = {m.name for m in StateCollector(Watched(shards=lambda: (1, 2))).collect()}
    assert sharded - alone == {"gpubot_shards", "gpubot_shards_held"}
    exported |= sharded

    queries = dashboard_queries() + rule_queries()
    used = {name for q in queries for name in NAME.findall(q)}

    assert len(used) >= 15
    assert used - exported == set()
    assert all(NAME.search(q) for q in rule_queries())
