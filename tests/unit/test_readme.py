"""The README is the front door: its two commands are the demo and the test command CI runs,
and every page it points to exists."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_every_relative_link_names_a_file_in_the_repository() -> None:
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert local, "the README links to no page"
    missing = [t for t in local if not (REPO / t).exists()]
    assert missing == []


def test_the_two_commands_are_the_demo_and_what_ci_runs() -> None:
    blocks = re.findall(r"```sh\n(.*?)```", README, re.S)
    assert blocks[0].strip().endswith(".venv/bin/gpubot demo")
    assert blocks[1].strip() == "bash scripts/test"
    assert "bash scripts/test" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
