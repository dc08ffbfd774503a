#!/usr/bin/env python3
"""Rewrite the action reference in README.md from the action registry.

Run it after adding or changing an action:  .venv/bin/python scripts/actions_reference.py
It replaces the text between the actions-reference marker comments with
`gpubot actions --markdown`; tests/unit/test_readme_actions.py fails until that is done.
"""

from __future__ import annotations

from pathlib import Path

from gpubot.cli.actions import markdown, splice
from gpubot.engine.registry import builtin_registry

README = Path(__file__).resolve().parents[1] / "README.md"


def main() -> None:
    text = README.read_text(encoding="utf-8")
    updated = splice(text, markdown(builtin_registry()))
    if updated != text:
        README.write_text(updated, encoding="utf-8")
        print(f"{README}: action reference rewritten")
    else:
        print(f"{README}: action reference already up to date")


if __name__ == "__main__":
    main()
