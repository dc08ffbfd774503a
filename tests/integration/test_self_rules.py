"""gpubot's own alert rules with the real promtool: they load, and their unit tests pass."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

PROMETHEUS = Path(__file__).parents[2] / "deploy" / "prometheus"
RULES = PROMETHEUS / "gpubot-self-rules.yaml"
RULE_TESTS = PROMETHEUS / "gpubot-self-rules.test.yaml"


def promtool() -> str:
    """The Debian binary (package prometheus); fails with CI=true when it is missing."""
    path = shutil.which("promtool")
    if path is None:
        reason = "promtool not installed (Debian package prometheus)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def test_self_rules_pass_promtool_check() -> None:
    """The real promtool loads all nine rules without an error."""
    result = run(promtool(), "check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 10 rules found" in result.stdout


def test_self_rules_pass_their_promtool_unit_tests() -> None:
    """Approvals waiting, no leader, runs needing a human, webhook rejections, the Slack
    backlog, refused agent events and failing dependencies each fire when they should and not
    before (see the .test.yaml)."""
    result = run(promtool(), "test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
