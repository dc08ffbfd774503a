"""Runbook load errors: each names the file, the line and the field, in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from runbook_samples import VALID, line_of, write

from gpubot.domain.runbooks.loader import load_file, parse_runbook
from gpubot.errors import RunbookError


def load_error(tmp_path: Path, text: str) -> tuple[Path, str]:
    path = write(tmp_path, text)
    with pytest.raises(RunbookError) as caught:
        load_file(path)
    return path, str(caught.value)


def test_invalid_yaml_names_the_line_of_the_problem(tmp_path: Path) -> None:
    """A YAML syntax error is reported at the line PyYAML points to, with its reason."""
    text = VALID.replace("name: demo", "name: demo\ndescription: a: b")
    path, message = load_error(tmp_path, text)
    assert message.startswith(f"{path}:{line_of(text, 'description: a: b')}: invalid YAML:")
    assert "mapping values are not allowed here" in message


def test_tab_indentation_names_its_line(tmp_path: Path) -> None:
    """A tab used for indentation is reported on the line that has it."""
    text = VALID.replace("  - id: cordon", "\t- id: cordon")
    path, message = load_error(tmp_path, text)
    assert f"{path}:{line_of(text, chr(9))}: invalid YAML:" in message


@pytest.mark.parametrize(
    ("old", "new", "marker", "field", "reason"),
    [
        (
            "    action: node.cordon",
            "    action: node.cordon\n    bogus: 1",
            "bogus: 1",
            "steps[1].bogus",
            "Extra inputs are not permitted",
        ),
        (
            "    action: node.cordon",
            "    action: node.cordon\n    approval: sometimes",
            "approval: sometimes",
            "steps[1].approval",
            "'auto', 'required' or 'two-person'",
        ),
        (
            "    action: node.cordon",
            "    action: node.cordon\n    timeout: 5 minutes",
            "timeout: 5 minutes",
            "steps[1].timeout",
            "not a duration: '5 minutes'",
        ),
        (
            "    action: node.gpu_health",
            "    action: node.gpu_health\n    retry_delay: soon",
            "retry_delay: soon",
            "steps[0].retry_delay",
            "not a duration",
        ),
        (
            "    action: node.cordon",
            "    action: node.cordon\n    retries: 11",
            "retries: 11",
            "steps[1].retries",
            "less than or equal to 10",
        ),
        (
            "    action: node.cordon",
            "    action: node.cordon\n    on_failure: retry",
            "on_failure: retry",
            "steps[1].on_failure",
            "on_failure must be stop, continue or goto:<step id>",
        ),
        (
            "matchers: ['xid=\"79\"']",
            "matchers: ['xid==\"79\"']",
            "matchers:",
            "triggers[0].matchers",
            "not a label matcher",
        ),
        (
            "matchers: ['xid=\"79\"']",
            "matchers: ['xid=~\"[7\"']",
            "matchers:",
            "triggers[0].matchers",
            "bad regular expression",
        ),
        (
            "  - alertname: GPUXidError",
            "  - command: demo",
            "command: demo",
            "triggers[0]",
            "matchers need an alertname",
        ),
        (
            "  - id: cordon",
            "  - id: Cordon!",
            "id: Cordon!",
            "steps[1].id",
            "should match pattern",
        ),
    ],
)
def test_field_error_names_file_line_and_field(
    tmp_path: Path, old: str, new: str, marker: str, field: str, reason: str
) -> None:
    """Each invalid field is reported as `path:line: field: reason` at the line that has it."""
    assert old in VALID
    text = VALID.replace(old, new, 1)
    path, message = load_error(tmp_path, text)
    assert message.startswith(f"{path}:{line_of(text, marker)}: {field}: "), message
    assert reason in message
    assert "\n" not in message


def test_missing_triggers(tmp_path: Path) -> None:
    """A runbook without triggers points at its top mapping and names the field."""
    text = VALID.replace(
        "triggers:\n  - alertname: GPUXidError\n    matchers: ['xid=\"79\"']\n", ""
    )
    path, message = load_error(tmp_path, text)
    assert message == f"{path}:{line_of(text, 'name: demo')}: triggers: Field required"


def test_empty_triggers(tmp_path: Path) -> None:
    """`triggers: []` is refused on its own line: at least one trigger is needed."""
    text = "name: demo\ntriggers: []\nsteps:\n  - id: a\n    action: notify\n"
    path, message = load_error(tmp_path, text)
    assert message.startswith(f"{path}:2: triggers: ")
    assert "at least 1" in message


def test_trigger_with_neither_alertname_nor_command(tmp_path: Path) -> None:
    """A trigger must name an alert or a command."""
    text = VALID.replace("  - alertname: GPUXidError\n    matchers: ['xid=\"79\"']", "  - {}")
    path, message = load_error(tmp_path, text)
    assert message.startswith(f"{path}:{line_of(text, '- {}')}: triggers[0]: ")
    assert "a trigger needs an alertname or a command" in message


def test_duplicate_step_ids(tmp_path: Path) -> None:
    """Two steps with one id are refused, naming the id (reported on the runbook itself)."""
    text = VALID.replace("id: cordon", "id: check")
    path, message = load_error(tmp_path, text)
    assert message == (
        f"{path}:{line_of(text, 'name: demo')}: (runbook): duplicate step id(s): check"
    )


@pytest.mark.parametrize(
    ("step", "goto"),
    [("cordon", "nowhere"), ("cordon", "check"), ("cordon", "cordon"), ("check", "nowhere")],
)
def test_on_failure_goto_must_name_a_later_step(tmp_path: Path, step: str, goto: str) -> None:
    """goto to an unknown, earlier or the same step is refused, so runbooks cannot loop."""
    marker = f"    action: node.{'cordon' if step == 'cordon' else 'gpu_health'}"
    text = VALID.replace(marker, f"{marker}\n    on_failure: goto:{goto}")
    path, message = load_error(tmp_path, text)
    assert message.startswith(f"{path}:{line_of(text, 'name: demo')}: (runbook): ")
    assert f"step {step}: on_failure goto:{goto} must name a later step" in message


def test_target_must_be_a_param(tmp_path: Path) -> None:
    """`target` must name one of the params."""
    path, message = load_error(tmp_path, VALID.replace("steps:", "target: node\nsteps:"))
    assert message.endswith("(runbook): target 'node' is not one of the params")
    assert message.startswith(f"{path}:")


def test_several_errors_are_counted(tmp_path: Path) -> None:
    """The first error is reported in full and the rest are counted."""
    text = "name: Demo\ntriggers: []\nsteps: []\n"
    path, message = load_error(tmp_path, text)
    assert message.startswith(f"{path}:1: name: ")
    assert message.endswith("(and 2 more)")


@pytest.mark.parametrize("text", ["", "# only a comment\n", "- a\n- b\n", "hello\n"])
def test_document_that_is_not_a_mapping(tmp_path: Path, text: str) -> None:
    """An empty file, a list or a scalar is refused with line 1 and a hint of the shape."""
    path, message = load_error(tmp_path, text)
    assert message == f"{path}:1: (runbook): expected a mapping with name, triggers, steps"


def test_parse_runbook_uses_the_given_path() -> None:
    """parse_runbook puts the path it is given in the message (for text from elsewhere)."""
    with pytest.raises(RunbookError, match=r"^inline\.yaml:\d+: "):
        parse_runbook("name: [", path=Path("inline.yaml"))
