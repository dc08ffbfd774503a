"""XID log parsing reads real dmesg / journal lines in both bus-id forms, and nothing else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpubot.knowledge.xid.kernel_log import parse_gpu_identities, parse_xid_line, parse_xid_lines

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
    if "time" in case:
        assert (event.time.as_json() if event.time else None) == case["time"]
    if "uptime_s" in case:
        assert event.uptime_s == case["uptime_s"]
    if "recovery" in case:
        assert event.recovery is not None
        got_recovery = event.recovery.as_json()
        assert {k: got_recovery[k] for k in case["recovery"]} == case["recovery"]
    else:
        assert event.recovery is None


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
    assert event.pci_raw == "PCI:0000:3B:00.0"
    assert event.message == "GPU has fallen off the bus."


def test_empty_and_unrelated_text_yield_nothing() -> None:
    assert parse_xid_lines("") == []
    assert (
        parse_xid_lines("kernel: nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver") == []
    )


def test_codes_are_ascii_digits_only() -> None:
    # "٧٩" is 79 to int() and "²" a digit to str.isdigit(); neither is an XID code here.
    assert parse_xid_line("NVRM: Xid (PCI:0000:3b:00): ٧٩, GPU has fallen off the bus.") is None
    assert parse_xid_line("NVRM: Xid (PCI:0000:3b:00): 7², x") is None
    assert parse_xid_line("NVRM: Xid (PCI:0000:3b:00): 123456, too long a code") is None


def test_a_bus_id_with_an_impossible_device_is_not_an_event() -> None:
    assert parse_xid_line("NVRM: Xid (PCI:0000:3b:20): 79, GPU has fallen off the bus.") is None


def test_as_json_keys() -> None:
    event = parse_xid_line(
        "NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3, Contained ECC error"
    )
    assert event is not None
    assert set(event.as_json()) == {
        "xid",
        "pci",
        "pci_raw",
        "time",
        "uptime_s",
        "pid",
        "process",
        "message",
        "recovery",
        "line",
    }


def test_uuid_and_serial_from_the_driver_lines() -> None:
    # tinygrad/tinygrad#6947: the driver names the GPU once, before its first XID.
    text = (
        "[22859.081855] NVRM: GPU at PCI:0000:01:00: GPU-af4f89ae-d08b-1b53-9938-c9ed209a3513\n"
        "[22859.081859] NVRM: GPU Board Serial Number: 1710424007242\n"
    )
    [gpu] = parse_gpu_identities(text).values()
    assert (gpu.pci, gpu.uuid, gpu.serial) == (
        "0000:01:00.0",
        "GPU-af4f89ae-d08b-1b53-9938-c9ed209a3513",
        "1710424007242",
    )


def test_a_serial_line_without_a_gpu_line_before_it_is_ignored() -> None:
    assert parse_gpu_identities("NVRM: GPU Board Serial Number: 1710424007242\n") == {}
    # A reset message on the same prefix names no UUID.
    assert parse_gpu_identities("NVRM: GPU at PCI:0000:01:00: GPU_IN_FULLCHIP_RESET\n") == {}
