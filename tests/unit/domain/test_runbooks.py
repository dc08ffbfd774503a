"""Runbook files: the shipped ones load, triggers match alerts, names are unique."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from runbook_samples import VALID, line_of, write

from gpubot.domain.incidents.correlation import XID_ACTION_LABEL, xid_action
from gpubot.domain.runbooks.loader import load_dirs, load_file
from gpubot.domain.runbooks.spec import Runbook
from gpubot.domain.runbooks.templating import check_syntax
from gpubot.errors import RunbookError

SHIPPED = Path(__file__).parents[3] / "runbooks"
FIXTURES = Path(__file__).parents[2] / "fixtures" / "alertmanager"


def xid_labels(**override: str) -> dict[str, str]:
    """The fixture's labels as intake sees them, with NVIDIA's bucket added for XIDs."""
    body = json.loads((FIXTURES / "xid79_firing.json").read_bytes())
    labels: dict[str, str] = body["alerts"][0]["labels"] | override
    if (action := xid_action(labels.get("xid", ""))) is not None:
        labels[XID_ACTION_LABEL] = action
    return labels


def test_shipped_runbooks_load() -> None:
    """runbooks/*.yaml load with load_dirs, names unique, paths kept for messages."""
    loaded = {item.runbook.name: item for item in load_dirs([SHIPPED])}
    assert set(loaded) == {
        "gpu-reset",
        "idle-reclaim",
        "node-handoff",
        "oom-triage",
        "release-node",
        "slurm-oom-triage",
        "thermal",
        "xid-route",
        "xid79",
    }
    assert loaded["xid79"].path == SHIPPED / "xid79.yaml"
    xid79 = loaded["xid79"].runbook
    assert [s.id for s in xid79.steps] == [
        "check",
        "history",
        "owner",
        "leave-alone",
        "cordon",
        "taint",
        "notify",
        "drain",
        "evidence",
        "evidence-failed",
        "reset",
        "verify",
        "diag",
        "untaint",
        "uncordon",
        "released",
        "diag-failed",
        "diag-handoff",
        "reboot",
        "rma",
        "rma-notify",
    ]
    assert xid79.commands == ("xid79",)
    assert xid79.target == "node"
    drain = xid79.step("drain")
    assert (drain.timeout, drain.retries, drain.retry_delay) == (600.0, 3, 30.0)
    assert drain.approval == "required"
    assert drain.approvers == "oncall"
    assert xid79.step("cordon").approval == "auto"
    release = loaded["release-node"].runbook
    assert release.commands == ("release-node",)
    assert not release.params["node"].default


def test_shipped_runbook_templates_compile() -> None:
    """Every string arg and `when` condition in the shipped runbooks is valid Jinja."""
    for item in load_dirs([SHIPPED]):
        for step in item.runbook.steps:
            for value in step.args.values():
                if isinstance(value, str):
                    assert check_syntax(value) is None, (item.path, step.id, value)
            if step.when is not None:
                assert check_syntax(step.when, expression=True) is None, (item.path, step.id)


def test_line_points_at_a_field() -> None:
    """LoadedRunbook.line maps a field location to its 1-based line in the file."""
    item = load_file(SHIPPED / "xid79.yaml")
    text = (SHIPPED / "xid79.yaml").read_text()
    assert item.line(("name",)) == line_of(text, "name: xid79")
    assert item.line(("steps", 7, "timeout")) == line_of(text, "timeout: 10m")


def test_xid79_matches_only_reset_and_reboot_xids() -> None:
    """The xid79 runbook fires on GPUXidError whose NVIDIA action is a reset or a reboot."""
    (item,) = [i for i in load_dirs([SHIPPED]) if i.runbook.name == "xid79"]
    runbook = item.runbook
    assert runbook.matches_alert(xid_labels())
    assert runbook.matches_alert(xid_labels(xid="48"))  # WORKFLOW_XID_48
    assert not runbook.matches_alert(xid_labels(xid="13"))
    assert not runbook.matches_alert(xid_labels(xid="790"))
    assert not runbook.matches_alert(xid_labels(alertname="GPUHighTemperature"))
    no_code = {k: v for k, v in xid_labels().items() if k not in ("xid", XID_ACTION_LABEL)}
    assert not runbook.matches_alert(no_code)


def test_command_only_runbook_matches_no_alert() -> None:
    """A runbook with only a command trigger is never started by an alert."""
    (item,) = [i for i in load_dirs([SHIPPED]) if i.runbook.name == "release-node"]
    assert not item.runbook.matches_alert(xid_labels())
    assert not item.runbook.matches_alert({})


def test_any_trigger_may_match(tmp_path: Path) -> None:
    """Triggers are alternatives; matchers within one trigger must all hold."""
    text = VALID.replace(
        "steps:",
        "  - alertname: GPUHighTemperature\n"
        "    matchers: ['gpu=~\"[0-3]\"', 'severity=\"critical\"']\n"
        "steps:",
    )
    runbook = load_file(write(tmp_path, text)).runbook
    hot = {"alertname": "GPUHighTemperature", "gpu": "3", "severity": "critical"}
    assert runbook.matches_alert(hot)
    assert not runbook.matches_alert(hot | {"gpu": "4"})
    assert not runbook.matches_alert(hot | {"severity": "warning"})
    assert runbook.matches_alert({"alertname": "GPUXidError", "xid": "79"})


def test_forward_goto_is_allowed(tmp_path: Path) -> None:
    """goto to a later step loads, and Step.goto gives the target id."""
    text = VALID.replace(
        "    action: node.gpu_health", "    action: x\n    on_failure: goto:cordon"
    )
    runbook = load_file(write(tmp_path, text)).runbook
    assert runbook.step("check").goto == "cordon"
    assert runbook.step("cordon").goto is None


def test_duplicate_runbook_name_across_files(tmp_path: Path) -> None:
    """The second file defining a name is refused and names the first."""
    first = write(tmp_path, VALID, "a.yaml")
    second = write(tmp_path, VALID, "b.yml")
    with pytest.raises(RunbookError) as caught:
        load_dirs([tmp_path])
    message = str(caught.value)
    assert message.startswith(f"{second}:")
    assert f"name: runbook 'demo' is also defined in {first}" in message


def test_duplicate_runbook_name_across_directories(tmp_path: Path) -> None:
    """A local runbook cannot silently shadow a shipped one of the same name."""
    write(tmp_path, VALID.replace("name: demo", "name: xid79"))
    with pytest.raises(RunbookError, match=r"'xid79' is also defined in .*xid79\.yaml"):
        load_dirs([SHIPPED, tmp_path])


def test_yml_and_yaml_files_load_other_files_are_ignored(tmp_path: Path) -> None:
    """Both extensions are runbooks; READMEs and the like beside them are not read."""
    write(tmp_path, VALID, "a.yaml")
    write(tmp_path, VALID.replace("name: demo", "name: other"), "b.yml")
    write(tmp_path, "not: [yaml", "README.md")
    assert sorted(i.runbook.name for i in load_dirs([tmp_path])) == ["demo", "other"]


def test_missing_directory_and_unreadable_file(tmp_path: Path) -> None:
    """A missing directory or file is a RunbookError naming it, not an OSError."""
    with pytest.raises(RunbookError, match="not a directory of runbooks"):
        load_dirs([tmp_path / "nope"])
    with pytest.raises(RunbookError, match=r"nope\.yaml: cannot read"):
        load_file(tmp_path / "nope.yaml")


def test_runbook_model_is_strict_at_the_top_level() -> None:
    """An unknown top-level key is refused, not ignored."""
    with pytest.raises(ValueError, match="Extra inputs"):
        Runbook.model_validate(
            {
                "name": "x",
                "triggers": [{"command": "x"}],
                "steps": [{"id": "a", "action": "b"}],
                "stpes": [],
            }
        )


def test_duplicate_name_error_points_at_the_name_line(tmp_path: Path) -> None:
    """The duplicate-name error should carry the line of `name:` (line 2 here)."""
    write(tmp_path, VALID, "a.yaml")
    second = write(tmp_path, VALID, "b.yaml")
    with pytest.raises(RunbookError) as caught:
        load_dirs([tmp_path])
    assert str(caught.value).startswith(f"{second}:{line_of(VALID, 'name: demo')}: name:")
