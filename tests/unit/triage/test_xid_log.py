"""XID log parsing reads real dmesg / journal lines in both bus-id forms, and nothing else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpubot.domain.xid_log import parse_xid_line, parse_xid_lines

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "xid" / "lines.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(FIXTURE.read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["line"][:60] for c in CASES])
def test_real_lines_parse_to_the_expected_fields(case: dict[str, Any]) -> None:
    event = parse_xid_line(case["line"])
    if case["expected"] is None:
        assert event is None
        return
    assert event is not None
    got = {k: getattr(event, k) for k in ("code", "pci", "pid", "process", "message")}
    assert got == case["expected"]
    assert event.line == case["line"].strip()


def test_every_fixture_line_names_its_source() -> None:
    assert all(case.get("source") for case in CASES)


def test_a_whole_log_yields_only_the_xid_lines_in_order() -> None:
    text = "\n".join(case["line"] for case in CASES)
    events = parse_xid_lines(text)
    assert [e.code for e in events] == [c["expected"]["code"] for c in CASES if c["expected"]]


def test_pid_without_name_and_bus_id_with_function_are_read() -> None:
    event = parse_xid_line(
        "NVRM: Xid (PCI:0000:3B:00.0): 79, pid=2113, GPU has fallen off the bus."
    )
    assert event is not None
    assert (event.code, event.pci, event.pid, event.process) == (79, "0000:3b:00.0", 2113, None)
    assert event.message == "GPU has fallen off the bus."


def test_empty_and_unrelated_text_yield_nothing() -> None:
    assert parse_xid_lines("") == []
    assert (
        parse_xid_lines("kernel: nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver") == []
    )


def test_as_json_keys() -> None:
    event = parse_xid_line(
        "NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3, Contained ECC error"
    )
    assert event is not None
    assert set(event.as_json()) == {"xid", "pci", "pid", "process", "message", "line"}
