"""The docs site's generated reference pages are what scripts/docs_reference.py writes from the
code now: the settings' schema, the CLI parser, the metrics registries and the action registry."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "docs_reference.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return _script()


@pytest.mark.parametrize("page", ["config.md", "cli.md", "metrics.md", "actions.md"])
def test_committed_page_is_the_generated_one(script: ModuleType, page: str) -> None:
    """Each page in docs/reference equals what the code generates; a stale one names the fix."""
    path = REPO / "docs" / "reference" / page
    assert path.read_text(encoding="utf-8") == script.PAGES[page](), (
        f"docs/reference/{page} is stale: run {script.REGENERATE} and commit it"
    )


def test_check_names_a_stale_page_and_write_repairs_it(
    script: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--check exits 1 naming a page whose text differs from the code's; writing fixes it."""
    monkeypatch.setattr(script, "REPO", tmp_path)
    monkeypatch.setattr(script, "REFERENCE", tmp_path / "docs" / "reference")
    pages = {"actions.md": script.PAGES["actions.md"]}
    monkeypatch.setattr(script, "PAGES", pages)
    script.write(pages)
    assert script.main(["--check"]) == 0
    page = tmp_path / "docs" / "reference" / "actions.md"
    page.write_text(page.read_text(encoding="utf-8").replace("node.drain", "node.dran"))
    assert script.main(["--check"]) == 1
    assert "docs/reference/actions.md is stale" in capsys.readouterr().err
    script.write(pages)
    assert script.main(["--check"]) == 0


def test_a_new_setting_makes_the_config_page_stale(
    script: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The config page follows the schema: a setting added to it shows up as a stale page."""
    from pydantic import Field, create_model

    from gpubot.config import Settings, settings

    extended = create_model(
        "Settings",
        __base__=Settings,
        brand_new_knob=(int, Field(7, description="a setting the page does not know")),
    )
    monkeypatch.setattr(settings, "Settings", extended)
    monkeypatch.setattr(sys.modules["gpubot.config"], "Settings", extended)
    generated = script.config_page()
    assert "`brand_new_knob`" in generated
    assert generated != (REPO / "docs" / "reference" / "config.md").read_text(encoding="utf-8")


def test_script_runs_as_the_docs_say() -> None:
    """`python scripts/docs_reference.py --check` runs from the repository root, exit 0."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def _unknown_keys(
    value: object, schema: dict[str, Any], defs: dict[str, Any], at: str
) -> list[str]:
    """Keys of `value` that the settings schema at `schema` does not have, as dotted paths."""
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    options = [schema, *schema.get("anyOf", [])]
    if isinstance(value, list):
        items = [o["items"] for o in options if o.get("type") == "array" and "items" in o]
        return [k for v in value for i in items[:1] for k in _unknown_keys(v, i, defs, f"{at}[]")]
    if not isinstance(value, dict):
        return []
    for option in options:
        if "$ref" in option:
            return _unknown_keys(value, option, defs, at)
        if "properties" in option:
            props = option["properties"]
            found = [f"{at}{k}" for k in value if k not in props]
            for key, inner in value.items():
                if key in props:
                    found += _unknown_keys(inner, props[key], defs, f"{at}{key}.")
            return found
    return []


def test_configure_page_example_uses_only_keys_the_settings_have() -> None:
    """The commented example config on the Configure page names only real settings, so it
    cannot drift from the schema the reference is generated from."""
    from gpubot.config import Settings

    page = (REPO / "docs" / "configure" / "index.md").read_text(encoding="utf-8")
    example = yaml.safe_load(re.search(r"```yaml\n(.*?)```", page, re.S).group(1))
    schema = Settings.model_json_schema()
    assert _unknown_keys(example, schema, schema.get("$defs", {}), "") == []
    assert _unknown_keys({"slack": {"chanel": "#x"}}, schema, schema["$defs"], "") == [
        "slack.chanel"
    ]
