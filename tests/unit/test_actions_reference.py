"""`gpubot actions` reads the registry, and the docs' actions reference is its output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpubot.actions.outputs import OUTPUTS
from gpubot.cli import main
from gpubot.cli.actions import markdown
from gpubot.engine.registry import builtin_registry

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "actions.md"
REGENERATE = ".venv/bin/python scripts/docs_reference.py"


def _gpubot(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as ended:
        main(list(argv))
    out = capsys.readouterr()
    return int(str(ended.value.code)), out.out, out.err


def test_actions_page_ends_with_the_generated_reference() -> None:
    """docs/reference/actions.md is its intro and then exactly `gpubot actions --markdown`."""
    text = PAGE.read_text(encoding="utf-8")
    assert text.endswith("\n" + markdown(builtin_registry())), (
        f"docs/reference/actions.md is out of date; regenerate it with `{REGENERATE}` and commit it"
    )


def test_declared_outputs_name_registered_actions() -> None:
    """actions/outputs.py names only actions the registry has (none left behind a rename)."""
    assert set(OUTPUTS) <= {s.name for s in builtin_registry().specs()}


def test_actions_json_lists_args_outputs_and_approval(capsys: pytest.CaptureFixture[str]) -> None:
    """Each action's JSON has its args with types, defaults and constraints, its outputs,
    whether it mutates and the approval a runbook may give it."""
    code, out, _ = _gpubot(capsys, "actions", "--json")
    assert code == 0
    actions = {a["name"]: a for a in json.loads(out)}
    cap = actions["gpu.power_cap"]
    assert (cap["mutating"], cap["approval"]) == (True, "required or two-person (never auto)")
    args = {a["name"]: a for a in cap["args"]}
    assert args["gpu"]["required"] is True
    assert args["gpu"]["constraints"] == [">= 0", "<= 63"]
    assert (args["fraction"]["default"], args["fraction"]["type"]) == (0.7, "number")
    assert "previous_w" in cap["outputs"]
    assert actions["node.gpu_health"]["approval"] == "auto"
    assert actions["node.cordon"]["approval"] == "auto allowed (reversible)"


def test_actions_show_one_and_refuse_an_unknown_one(capsys: pytest.CaptureFixture[str]) -> None:
    """`actions show NAME` prints one action; an unknown name is one line, exit 2."""
    code, out, _ = _gpubot(capsys, "actions", "show", "node.taint")
    assert code == 0
    assert 'effect: "NoSchedule" | "PreferNoSchedule" (default "NoSchedule")' in out
    code, _, err = _gpubot(capsys, "actions", "show", "node.explode")
    assert code == 2
    assert err.splitlines() == [err.strip()]
    assert "unknown action 'node.explode'" in err
