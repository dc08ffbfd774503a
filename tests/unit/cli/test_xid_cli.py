"""`gpubot xid parse` in a subprocess: the per-GPU report as text and as JSON, and --window."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "xid" / "logs.yaml"
LOGS: dict[str, str] = {c["name"]: c["text"] for c in yaml.safe_load(FIXTURE.read_text())}
# Real logs from several machines, read as one file: four GPUs with UUIDs, one XID 154.
MIXED = LOGS["akash_dmesg_ctime"] + LOGS["tinygrad_xid31_twice"] + LOGS["talos_iso_xid154_reset"]


def gpubot(*args: str, stdin: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpubot.cli", "xid", "parse", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def parse_json(text: str, tmp_path: Path, *args: str) -> dict[str, Any]:
    result = gpubot("--log", "-", "--json", *args, stdin=text, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def test_json_has_events_gpus_identities_and_repeats(tmp_path: Path) -> None:
    out = parse_json(MIXED, tmp_path)
    assert set(out) == {"events", "gpus", "identities", "repeats"}
    first = out["events"][0]
    assert first["time"] == {
        "kind": "ctime",
        "text": "Wed Jul 31 23:14:18 2024",
        "datetime": "2024-07-31T23:14:18",
    }
    assert (first["pci"], first["pci_raw"], first["action"]) == (
        "0000:00:05.0",
        "PCI:0000:00:05",
        "IGNORE",
    )
    gpus = {g["pci"]: g for g in out["gpus"]}
    assert gpus["0000:01:00.0"]["uuid"] == "GPU-af4f89ae-d08b-1b53-9938-c9ed209a3513"
    assert gpus["0000:01:00.0"]["xids"] == {"31": 2}
    assert gpus["0000:0b:00.0"]["uuid"] is None
    [xid154] = [e for e in out["events"] if e["xid"] == 154]
    assert xid154["recovery"]["action"] == "GPU_RESET"
    assert xid154["time"]["kind"] == "iso"
    repeated = {(r["pci"], r["xid"]): r["repeated"] for r in out["repeats"]}
    assert repeated == {("0000:00:07.0", 31): False, ("0000:01:00.0", 31): True}


def test_window_option_narrows_what_counts_as_a_repeat(tmp_path: Path) -> None:
    out = parse_json(LOGS["tinygrad_xid31_twice"], tmp_path, "--window", "5m")
    [check] = out["repeats"]
    assert (check["occurrences"], check["repeated"], check["window_s"]) == (1, False, 300.0)


def test_text_report_reads_per_gpu_with_advice(tmp_path: Path) -> None:
    result = gpubot("--log", "-", stdin=MIXED, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    events, gpus, recovery, repeats = result.stdout.rstrip("\n").split("\n\n")
    assert events.splitlines()[0].split()[:3] == ["XID", "PCI", "PID"]
    assert len(events.splitlines()) == 1 + 7
    assert "Wed Jul 31 23:14:18 2024" in events
    assert "0000:01:00.0  GPU-af4f89ae-d08b-1b53-9938-c9ed209a3513, serial 1710424007242" in gpus
    assert "XID 31 x2" in gpus
    assert "GPU_RESET -> xid79" in recovery
    assert "0000:01:00.0 XID 31: 2 occurrence(s)" in repeats
    assert "DCGM diagnostics" in repeats
    assert "check the application" in repeats
    assert max(len(line) for line in result.stdout.splitlines()) < 240


def test_a_log_without_xids(tmp_path: Path) -> None:
    result = gpubot("--log", "-", stdin="kernel: nothing to see\n", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "no XID events found\n")
    assert parse_json("", tmp_path) == {"events": [], "gpus": [], "identities": [], "repeats": []}


def test_a_bad_window_is_one_line_and_non_zero(tmp_path: Path) -> None:
    result = gpubot("--log", "-", "--window", "soon", stdin="", cwd=tmp_path)
    assert result.returncode != 0
    assert "--window" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_help_names_the_report(tmp_path: Path) -> None:
    result = gpubot("--help", stdin="", cwd=tmp_path)
    assert result.returncode == 0
    for words in ("--window", "0000:3b:00.0", "UUID", "XID 154", "DCGM"):
        assert words in " ".join(result.stdout.split())


def test_explain_154_lists_the_routes(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gpubot.cli", "xid", "explain", "154"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "NODE_REBOOT: xid79: drain, then a reboot request" in result.stdout
    assert "DRAIN_P2P: xid-route" in result.stdout
