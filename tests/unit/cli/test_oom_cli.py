"""`gpubot triage oom` in process: the JSON names family, confidence and evidence; a bare exit
code 137 is not an OOM kill; --help says what the classes are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpubot.cli import run

CUDNN = "RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED\n"


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert run(["triage", "oom", *args, "--json"]) == 0
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    return out


def test_json_names_family_confidence_and_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "pod.log"
    log.write_text(CUDNN)
    out = _json(capsys, "--log", str(log))
    assert (out["class"], out["family"], out["confidence"]) == (
        "cuda_oom",
        "cudnn_cublas_alloc_failed",
        "high",
    )
    assert out["evidence"] == [CUDNN.strip()]


def test_a_bare_exit_code_137_is_killed_unknown_not_a_host_oom(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("")
    out = _json(capsys, "--log", str(empty), "--exit-code", "137")
    assert out["class"] == "killed_unknown"
    out = _json(capsys, "--log", str(empty), "--exit-code", "137", "--reason", "OOMKilled")
    assert out["class"] == "host_oom_killed"


def test_human_output_says_family_and_confidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "pod.log"
    log.write_text(CUDNN)
    assert run(["triage", "oom", "--log", str(log), "--workload", "inference_server"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("class: cuda_oom\nfamily: cudnn_cublas_alloc_failed (high confidence)\n")
    assert "workload: inference_server" in text
    assert "--max-model-len" in text


def test_help_names_every_class(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run(["triage", "oom", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for word in ("killed_unknown", "family", "confidence", "--workload", "137"):
        assert word in text
