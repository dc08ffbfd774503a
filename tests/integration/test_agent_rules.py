"""The node agents' alert rules with the real promtool: they load, their unit tests pass, and
they query only series an agent's /metrics exports."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from test_self_rules import promtool, run

from gpubot.agent.metrics import AgentMetrics

PROMETHEUS = Path(__file__).parents[2] / "deploy" / "prometheus"
RULES = PROMETHEUS / "gpubot-agent-rules.yaml"
RULE_TESTS = PROMETHEUS / "gpubot-agent-rules.test.yaml"


def test_agent_rules_pass_promtool_check() -> None:
    result = run(promtool(), "check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 4 rules found" in result.stdout


def test_agent_rules_pass_their_promtool_unit_tests() -> None:
    """An XID event not delivered, a reset left unhealthy, NVML errors and a stream of wrong
    tokens each fire when they should, and a forwarded event, a lost GPU or a few wrong
    tokens do not (see the .test.yaml)."""
    result = run(promtool(), "test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_agent_rules_query_only_what_the_agent_exports() -> None:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    used = {n for g in groups for r in g["rules"] for n in re.findall(r"\bgpubot_\w+", r["expr"])}
    exported = {m.name + "_total" for m in AgentMetrics().registry.collect()}
    assert used
    assert used <= exported
