#!/usr/bin/env python3
"""Rewrite the actions reference, docs/reference/actions.md, from the action registry.

Run it after adding or changing an action:  .venv/bin/python scripts/actions_reference.py
It writes the actions page only; scripts/docs_reference.py writes every generated page, and
tests/unit/test_docs_reference.py fails while one is stale.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "docs_reference", Path(__file__).resolve().with_name("docs_reference.py")
)
assert _spec is not None
assert _spec.loader is not None
docs_reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(docs_reference)


def main() -> None:
    docs_reference.write({"actions.md": docs_reference.PAGES["actions.md"]})


if __name__ == "__main__":
    main()
