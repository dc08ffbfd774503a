"""`xid parse` per GPU on real logs: bus ids in one form, UUIDs, counts, XID 13/31 repeats."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpubot.knowledge.pci import normalise_bus_id
from gpubot.knowledge.xid.per_gpu import read_xid_log

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "xid" / "logs.yaml"
LOGS: dict[str, dict[str, Any]] = {c["name"]: c for c in yaml.safe_load(FIXTURE.read_text())}


def log(name: str) -> str:
    return str(LOGS[name]["text"])


def test_every_log_names_its_source() -> None:
    assert all(case["source"].startswith("https://github.com/") for case in LOGS.values())


@pytest.mark.parametrize(
    "text",
    ["0000:3b:00", "0000:3b:00.0", "PCI:0000:3b:00", "3b:00.0", "00000000:3B:00.0", "3B:00"],
)
def test_every_spelling_of_a_bus_id_is_one_id(text: str) -> None:
    assert normalise_bus_id(text) == "0000:3b:00.0"


@pytest.mark.parametrize(
    "text", ["", "3b", "0000:3b:20.0", "0000:3b:00.8", "0000:3b:00.0x", "0000:٣b:00", "x:3b:00"]
)
def test_what_is_not_a_bus_id(text: str) -> None:
    assert normalise_bus_id(text) is None


def test_per_gpu_summary_with_uuid_serial_counts_and_times() -> None:
    report = read_xid_log(log("akash_dmesg_ctime"))
    by_pci = {g.pci: g for g in report.gpus}
    assert list(by_pci) == ["0000:00:05.0", "0000:00:07.0", "0000:00:08.0"]
    first = by_pci["0000:00:05.0"]
    assert first.uuid == "GPU-efbdfde9-5798-a6e7-4c46-12518fa15375"
    assert first.serial == "1650423013443"
    assert first.counts == ((43, 2),)
    assert first.first is not None
    assert first.last is not None
    assert (first.first.text, first.last.text) == (
        "Wed Jul 31 23:14:18 2024",
        "Wed Jul 31 23:15:26 2024",
    )
    assert by_pci["0000:00:08.0"].counts == ((94, 1),)
    out = report.as_json()
    assert out["gpus"][0]["xids"] == {"43": 2}
    assert {i["pci"]: i["uuid"] for i in out["identities"]} == {
        "0000:00:05.0": "GPU-efbdfde9-5798-a6e7-4c46-12518fa15375",
        "0000:00:07.0": "GPU-3b6ec030-5adc-1847-e155-79f635584b4e",
        "0000:00:08.0": "GPU-c24840ec-8de1-83d5-b126-08000173ae32",
    }


@pytest.mark.parametrize("name", list(LOGS))
def test_every_event_has_its_code_and_a_canonical_bus_id(name: str) -> None:
    text = log(name)
    report = read_xid_log(text)
    xid_lines = [line for line in text.splitlines() if "NVRM: Xid (" in line]
    assert len(report.events) == len(xid_lines)
    for event, line in zip(report.events, xid_lines, strict=True):
        assert f"): {event.code}," in line
        assert normalise_bus_id(event.pci) == event.pci


def test_xid31_twice_on_one_gpu_under_two_processes_is_a_repeat() -> None:
    # tinygrad#6947: two MMU faults 344 s apart, pids 14292 and 14566.
    [check] = read_xid_log(log("tinygrad_xid31_twice")).repeats
    assert (check.pci, check.code, check.occurrences, check.lines) == ("0000:01:00.0", 31, 2, 2)
    assert check.repeated
    assert check.timed
    assert "DCGM diagnostics" in check.advice


def test_a_window_shorter_than_the_gap_makes_it_two_single_faults() -> None:
    [check] = read_xid_log(log("tinygrad_xid31_twice"), window_s=300).repeats
    assert check.occurrences == 1
    assert not check.repeated
    assert "check the application" in check.advice


@pytest.mark.parametrize(
    "name",
    ["relion_xid13_burst_syslog", "vllm_xid13_burst_uptime", "gpud_dmesg_ctime_xid13_then_109"],
)
def test_one_fault_printed_as_a_burst_of_lines_is_one_occurrence(name: str) -> None:
    [check] = read_xid_log(log(name)).repeats
    assert check.code == 13
    assert check.lines >= 3
    assert check.occurrences == 1
    assert not check.repeated
    assert "check the application" in check.advice


def test_xid31_once_then_other_codes_is_not_a_repeat() -> None:
    [check] = read_xid_log(log("chia_xid31_then_62_45")).repeats
    assert (check.code, check.occurrences, check.processes) == (
        31,
        1,
        ("cuda_plot_k32_v (pid 13332)",),
    )


def test_repeats_are_per_gpu_not_per_log() -> None:
    # XID 31 on 0000:00:07.0 and nothing else of 13/31: one GPU, one occurrence.
    [check] = read_xid_log(log("akash_dmesg_ctime")).repeats
    assert check.pci == "0000:00:07.0"
    assert not check.repeated


def test_lines_without_comparable_stamps_count_over_the_whole_log() -> None:
    text = "\n".join(
        [
            "NVRM: Xid (PCI:0000:01:00): 31, pid=14292, name=python, Ch 00000030",
            "NVRM: Xid (PCI:0000:01:00): 31, pid=14566, name=python, Ch 00000030",
        ]
    )
    [check] = read_xid_log(text).repeats
    assert check.occurrences == 2
    assert not check.timed


def test_a_localised_month_gives_no_time_but_keeps_the_event() -> None:
    report = read_xid_log(log("polish_journal_month"))
    assert [(e.code, e.time) for e in report.events] == [(38, None), (109, None)]
    assert report.gpus[0].uuid == "GPU-fb51809b-350a-99db-67b5-e16fc6d498ab"


def test_large_hostile_log_is_read_in_linear_time() -> None:
    # Lines built to make a backtracking pattern explode: long runs inside every group.
    evil = [
        "NVRM: Xid (PCI:0000:3b:00): 13, pid=" + "1" * 5000 + ", name=" + "a" * 20000,
        "[" + " " * 20000 + "1.2] NVRM: Xid (PCI:0000:3b:00): 13, x",
        "NVRM: GPU at PCI:0000:3b:00: GPU-" + "a-" * 20000,
        "Nov 25 " * 5000 + "NVRM: Xid (PCI:" + "0" * 20000 + ":3b:00): 13, x",
        "NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x"
        + "0" * 20000
        + " (None) to 0x1 ("
        + "G" * 20000,
    ]
    started = time.perf_counter()
    report = read_xid_log("\n".join(evil * 20))
    assert time.perf_counter() - started < 5.0
    assert all(e.code == 13 or e.code == 154 for e in report.events)
