"""Runbook text shared by the runbook tests: a valid document and file helpers."""

from __future__ import annotations

from pathlib import Path

VALID = """\
# A comment first, as in the shipped runbooks.
name: demo
triggers:
  - alertname: GPUXidError
    matchers: ['xid="79"']
steps:
  - id: check
    action: node.gpu_health
  - id: cordon
    action: node.cordon
"""


def write(directory: Path, text: str, name: str = "demo.yaml") -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def line_of(text: str, marker: str) -> int:
    """1-based number of the first line of `text` containing `marker`."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if marker in line)
