"""`gpubot triage oom` and `gpubot xid explain|parse` in a subprocess: output, JSON, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CUDA_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.78 GiB. GPU 0 has a total "
    "capacity of 31.47 GiB of which 12.73 GiB is free. Of the allocated memory 9.08 GiB is "
    "allocated by PyTorch, and 9.35 GiB is reserved by PyTorch but unallocated.\n"
)
DMESG = (
    "[Fri Apr  5 21:29:39 2024] NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, "
    "GPU has fallen off the bus.\n"
    "[Fri Apr  5 21:29:39 2024] NVRM: GPU 0000:a1:00.0: GPU has fallen off the bus.\n"
    "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001\n"
)


def gpubot(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpubot.cli", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_triage_oom_json_from_a_file(tmp_path: Path) -> None:
    (tmp_path / "pod.log").write_text(CUDA_OOM)
    result = gpubot("triage", "oom", "--log", "pod.log", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["class"] == "cuda_oom"
    assert out["evidence"]
    assert "CUDA out of memory" in out["evidence"][0]
    assert out["advice"]


def test_triage_oom_human_text_from_stdin(tmp_path: Path) -> None:
    result = gpubot("triage", "oom", "--log", "-", cwd=tmp_path, stdin=CUDA_OOM)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("class: cuda_oom\n")
    assert "advice:" in result.stdout


def test_triage_oom_takes_the_pod_status(tmp_path: Path) -> None:
    result = gpubot(
        "triage",
        "oom",
        "--log",
        "-",
        "--exit-code",
        "137",
        "--liveness-failed",
        "--json",
        cwd=tmp_path,
        stdin="",
    )
    assert json.loads(result.stdout)["class"] == "not_oom"


def test_triage_oom_missing_file_is_one_line_error(tmp_path: Path) -> None:
    result = gpubot("triage", "oom", "--log", "missing.log", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == "gpubot: error: missing.log: No such file or directory\n"


def test_xid_explain_json(tmp_path: Path) -> None:
    result = gpubot("xid", "explain", "79", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert (out["xid"], out["action"], out["runbook"]) == (79, "RESTART_BM", "xid79")
    assert set(out) == {"xid", "name", "action", "description", "runbook"}


def test_xid_explain_human(tmp_path: Path) -> None:
    result = gpubot("xid", "explain", "48", cwd=tmp_path)
    assert result.returncode == 0
    assert "WORKFLOW_XID_48" in result.stdout


def test_xid_explain_unknown_code_fails_with_one_line(tmp_path: Path) -> None:
    result = gpubot("xid", "explain", "999", cwd=tmp_path)
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1
    assert "XID 999 is not in NVIDIA's XID catalog" in result.stderr


def test_xid_parse_json_lists_only_xid_events(tmp_path: Path) -> None:
    result = gpubot("xid", "parse", "--log", "-", "--json", cwd=tmp_path, stdin=DMESG)
    assert result.returncode == 0, result.stderr
    events = json.loads(result.stdout)["events"]
    assert [(e["xid"], e["pci"], e["pid"], e["process"]) for e in events] == [
        (79, "0000:a1:00.0", None, None),
        (45, "0000:dc:00.0", 1818990, "python3"),
    ]
    assert events[0]["action"] == "RESTART_BM"


def test_xid_parse_human_table(tmp_path: Path) -> None:
    (tmp_path / "dmesg.txt").write_text(DMESG)
    result = gpubot("xid", "parse", "--log", "dmesg.txt", cwd=tmp_path)
    assert result.returncode == 0
    header, *rows = result.stdout.split("\n\n")[0].splitlines()
    assert header.split()[:3] == ["XID", "PCI", "PID"]
    assert len(rows) == 2


@pytest.mark.parametrize("args", [("triage", "oom"), ("xid", "explain"), ("xid", "parse")])
def test_help_is_available(tmp_path: Path, args: tuple[str, ...]) -> None:
    result = gpubot(*args, "--help", cwd=tmp_path)
    assert result.returncode == 0
    assert "usage: gpubot" in result.stdout
