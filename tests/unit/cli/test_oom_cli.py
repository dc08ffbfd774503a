"""`gpubot triage oom` in process: the JSON names family, confidence and evidence; a bare exit
code 137 is not an OOM kill; --help says what the classes are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpubot.cli import run
from gpubot.errors import InputError

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


KERNEL = (
    "2026-11-28T05:00:01+00:00 n1 kernel: oom-kill:constraint=CONSTRAINT_MEMCG,task_memcg="
    "/kubepods.slice/kubepods-burstable-pode412d02d_3c7c_5536_9858_f8c041332efb.slice/x.scope,"
    "task=python,pid=4242,uid=0\n"
    "2026-11-28T05:00:01+00:00 n1 kernel: Memory cgroup out of memory: Killed process 4242 "
    "(python) total-vm:9kB, anon-rss:8kB\n"
)


def test_the_nodes_kernel_log_decides_a_sigkill_the_log_cannot_explain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, kernel = tmp_path / "pod.log", tmp_path / "kern.log"
    log.write_text("Signal 9 (SIGKILL) received by PID 4242\n")
    kernel.write_text(KERNEL)
    uid = "e412d02d-3c7c-5536-9858-f8c041332efb"
    out = _json(capsys, "--log", str(log), "--kernel-log", str(kernel), "--pod-uid", uid)
    assert (out["class"], out["family"]) == ("host_oom_killed", "kernel_oom_killer_for_pod")
    assert out["sources_agreed"] == ["log", "kernel_log"]
    other = "0" * 8 + "-1111-2222-3333-" + "4" * 12
    out = _json(capsys, "--log", str(log), "--kernel-log", str(kernel), "--pod-uid", other)
    assert out["class"] == "killed_unknown"
    with pytest.raises(InputError, match="go together"):
        run(["triage", "oom", "--log", str(log), "--kernel-log", str(kernel)])
    with pytest.raises(InputError, match="not a pod UID"):
        run(["triage", "oom", "--log", str(log), "--kernel-log", str(kernel), "--pod-uid", "a;b"])
