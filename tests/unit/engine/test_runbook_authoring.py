"""`gpubot runbooks validate`: each check with a broken runbook, one line per problem, and the
same verdict `serve` reaches at start-up (both run engine/validation.validate)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpubot.cli import main
from gpubot.config import load_settings
from gpubot.errors import RunbookError
from gpubot.wiring import build_app

REPO = Path(__file__).resolve().parents[3]
GOOD = """\
name: authoring
triggers: [{command: authoring}]
params:
  node: {type: node, required: true}
  gpu: {type: int, default: "0"}
target: node
steps:
  - {id: check, action: node.gpu_health, args: {node: "{{ params.node }}"}, approval: auto}
  - id: reset
    action: gpu.reset
    args: {node: "{{ params.node }}", gpu: "{{ params.gpu }}"}
    approval: required
    approvers: oncall
    when: "not steps.check.output.healthy"
  - id: tell
    action: notify
    args: {message: "reset: {{ steps.reset.output.healthy }}"}
    approval: auto
"""


def _validate(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, list[str], str]:
    with pytest.raises(SystemExit) as ended:
        main(["runbooks", "validate", *(str(a) for a in argv)])
    out = capsys.readouterr()
    return int(str(ended.value.code)), out.err.splitlines(), out.out


def _write(tmp_path: Path, text: str, name: str = "authoring.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _no_env_config(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith(("GPUBOT_", "SLACK_")):
            monkeypatch.delenv(name)


def test_a_sound_runbook_and_the_shipped_ones_validate_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file and a folder together, every check passing: exit 0, one `ok` line each."""
    path = _write(tmp_path, GOOD)
    code, err, out = _validate(capsys, path, REPO / "runbooks")
    assert (code, err) == (0, [])
    assert "ok  authoring" in out
    assert {"xid79", "thermal", "release-node"} <= {line.split()[1] for line in out.splitlines()}


@pytest.mark.parametrize(
    ("old", "new", "field", "problem"),
    [
        pytest.param(
            'gpu: "{{ params.gpu }}"}',
            "gpu: seven}",
            "steps[1].args",
            "gpu: Input should be a valid integer",
            id="literal-arg-type",
        ),
        pytest.param(
            'args: {node: "{{ params.node }}"}, approval: auto}',
            'args: {node: "{{ params.node }}", nodes: 2}, approval: auto}',
            "steps[0].args",
            "nodes: Extra inputs are not permitted",
            id="unknown-arg",
        ),
        pytest.param(
            'args: {node: "{{ params.node }}", gpu: "{{ params.gpu }}"}',
            'args: {gpu: "{{ params.gpu }}"}',
            "steps[1].args",
            "node: Field required",
            id="missing-arg",
        ),
        pytest.param(
            'gpu: "{{ params.gpu }}"}',
            'gpu: "{{ params.gpus }}"}',
            "steps[1].args",
            "params.gpus is not a declared parameter (declared: node, gpu)",
            id="undeclared-param",
        ),
        pytest.param(
            'when: "not steps.check.output.healthy"',
            "when: \"steps.tell.status == 'succeeded'\"",
            "steps[1].when",
            "steps.tell: this or a later step; only earlier steps' results exist",
            id="later-step",
        ),
        pytest.param(
            'when: "not steps.check.output.healthy"',
            'when: "not steps.chek.output.healthy"',
            "steps[1].when",
            "steps.chek: no step of this runbook",
            id="unknown-step",
        ),
        pytest.param(
            'when: "not steps.check.output.healthy"',
            'when: "not steps.check.output.healty"',
            "steps[1].when",
            "steps.check.output.healty: node.gpu_health has no output 'healty'",
            id="undeclared-output",
        ),
        pytest.param(
            "{{ steps.reset.output.healthy }}",
            "{{ steps.reset.result }}",
            "steps[2].args",
            "steps.reset.result: a step result has status, output, error",
            id="step-field",
        ),
        pytest.param(
            "{{ steps.reset.output.healthy }}",
            "{{ steps.reset.output.healthy ",
            "steps[2].args",
            "template error",
            id="template-syntax",
        ),
        pytest.param(
            "    approval: required\n",
            "    approval: auto\n",
            "steps[1].approval",
            "gpu.reset changes the cluster in a way that is not safely reversible",
            id="auto-on-irreversible",
        ),
        pytest.param(
            "action: gpu.reset",
            "action: gpu.rest",
            "steps[1].action",
            "unknown action 'gpu.rest'",
            id="unknown-action",
        ),
    ],
)
def test_each_check_reports_file_line_field_and_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, field: str, problem: str
) -> None:
    """A runbook broken in one way gives exit 1 and exactly one `file:line: field: reason`."""
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    path = _write(tmp_path, text)
    line = GOOD[: GOOD.index(old)].count("\n") + 1  # where the break is
    code, err, _ = _validate(capsys, path)
    assert code == 1
    assert len(err) == 1, err
    assert err[0].startswith(f"gpubot: error: {path}:")
    assert f": {field}: " in err[0]
    assert problem in err[0]
    reported = err[0].removeprefix(f"gpubot: error: {path}:").split(":")[0]
    assert abs(int(reported) - line) <= 3  # the line of the field, or of its step


def test_approver_groups_are_checked_against_the_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--config` supplies the policy: a step's group missing from it is a problem."""
    path = _write(tmp_path, GOOD)
    config = tmp_path / "cfg.yaml"
    config.write_text("policy:\n  default_group: sre\n  groups:\n    sre: {users: [U1]}\n")
    code, err, _ = _validate(capsys, "--config", config, path)
    assert code == 1
    [line] = err
    assert "steps[1].approvers: no approver group 'oncall' in policy.groups" in line


def test_every_problem_gets_its_own_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two broken files, three problems: three lines, none hidden behind the first."""
    one = GOOD.replace('gpu: "{{ params.gpu }}"}', "gpu: seven}").replace(
        'output.healthy"', 'output.healty"'
    )
    _write(tmp_path, one, "one.yaml")
    _write(
        tmp_path, GOOD.replace("name: authoring", "name: other").replace("gpu.reset", "x"), "b.yaml"
    )
    code, err, _ = _validate(capsys, tmp_path)
    assert code == 1
    assert len(err) == 3, err
    assert sum("one.yaml" in line for line in err) == 2


def test_serve_refuses_what_validate_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The start-up check of `serve` (build_app) fails on the same first problem."""
    folder = tmp_path / "rb"
    folder.mkdir()
    _write(folder, GOOD.replace('output.healthy"', 'output.healty"'))
    _code, err, _ = _validate(capsys, folder)
    settings = load_settings(
        None, store={"url": "sqlite://"}, runbooks={"dirs": [str(folder)], "builtin": False}
    )
    with pytest.raises(RunbookError) as refused:
        build_app(settings)
    assert err == [f"gpubot: error: {refused.value}"]
