"""`gpubot plan --runbook NAME --param KEY=VALUE`: a command runbook's plan, stored nowhere."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpubot.cli import main

RUNBOOK = """\
name: release
triggers: [{command: release}]
params:
  node: {type: node, required: true}
target: node
steps:
  - {id: check, action: node.gpu_health, args: {node: "{{ params.node }}"}, approval: auto}
  - id: uncordon
    action: node.uncordon
    args: {node: "{{ params.node }}"}
    approval: required
"""


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("GPUBOT_", "SLACK_")):
            monkeypatch.delenv(name)
    folder = tmp_path / "rb"
    folder.mkdir()
    (folder / "release.yaml").write_text(RUNBOOK)
    path = tmp_path / "cfg.yaml"
    path.write_text(
        f"store: {{url: 'sqlite:///{tmp_path}/never.db'}}\n"
        f"runbooks: {{builtin: false, dirs: ['{folder}']}}\n"
        "slack: {mode: 'off'}\n"
    )
    return path


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as ended:
        main(["plan", *argv])
    out = capsys.readouterr()
    return int(str(ended.value.code)), out.out, out.err


def test_plan_of_a_command_runbook_prints_its_steps_and_stores_nothing(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sound plan exits 0 and shows each step; the configured store is never created."""
    code, out, _ = _plan(
        capsys, "--runbook", "release", "--param", "node=gpu-node-02", "--config", str(config)
    )
    assert code == 0
    assert "Plan: release" in out
    assert "uncordon" in out
    assert not (config.parent / "never.db").exists()


def test_plan_with_problems_exits_1_and_json_lists_them(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A node the cluster does not have: the plan lists the problem and the exit code is 1."""
    code, out, _ = _plan(
        capsys,
        "--runbook",
        "release",
        "--param",
        "node=gpu-node-99",
        "--json",
        "--config",
        str(config),
    )
    assert code == 1
    plan = json.loads(out)
    assert plan["runbook"] == "release"
    assert any("gpu-node-99" in p for p in plan["problems"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--runbook", "release", "--param", "node"], "--param 'node': expected KEY=VALUE"),
        (["--runbook", "release"], "release needs parameter node"),
        (["--runbook", "nosuch"], "unknown runbook 'nosuch'"),
        (["--runbook", "release", "--param", "node=a", "--param", "node=b"], "given twice"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    config: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """What was typed wrong is one `gpubot: error:` line, exit 2, no traceback."""
    code, _, err = _plan(capsys, *argv, "--config", str(config))
    assert code == 2
    assert err.splitlines() == [err.strip()]
    assert message in err
