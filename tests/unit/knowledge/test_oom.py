"""OOM triage: real messages from public trackers get the right class, judged from the numbers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpubot.knowledge.oom.triage import LABELS, classify
from gpubot.knowledge.oom.verdict import RULES, GiB, decide, gather

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "oom" / "cases.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(FIXTURE.read_text())


def _classify(case: dict[str, Any]) -> str:
    return classify(
        case["text"],
        exit_code=case.get("exit_code"),
        reason=case.get("reason"),
        liveness_failed=case.get("liveness_failed", False),
    ).cls


def test_fixture_set_is_large_real_and_has_hard_negatives() -> None:
    assert len(CASES) >= 40
    assert all(str(c["source"]).startswith("https://github.com/") for c in CASES)
    counts = Counter(c["expected"] for c in CASES)
    assert counts["not_oom"] >= 8
    assert set(counts) == set(LABELS)


def test_accuracy_on_the_fixture_set_is_100_percent() -> None:
    wrong = [
        (c["source"], c["expected"], _classify(c)) for c in CASES if _classify(c) != c["expected"]
    ]
    accuracy = 1 - len(wrong) / len(CASES)
    print(f"OOM triage accuracy: {accuracy:.1%} on {len(CASES)} real cases")
    assert wrong == []


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{c['expected']}" for i, c in enumerate(CASES)])
def test_every_positive_cites_the_lines_it_rests_on(case: dict[str, Any]) -> None:
    triage = classify(case["text"], exit_code=case.get("exit_code"))
    if triage.cls != "not_oom":
        assert triage.evidence
        assert triage.advice


def test_old_message_numbers_are_parsed_and_idle_reserve_is_reserved_minus_allocated() -> None:
    triage = classify(
        "RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 15.90 GiB total "
        "capacity; 13.13 GiB already allocated; 415.88 MiB free; "
        "14.80 GiB reserved in total by PyTorch)"
    )
    n = triage.numbers
    assert n["requested_bytes"] == 512 * 1024**2
    assert n["reserved_unallocated_bytes"] == n["reserved_bytes"] - n["allocated_bytes"]
    assert triage.cls == "cuda_oom_fragmentation"


def _new_message(*, request_gib: float, idle_gib: float, total_gib: float) -> str:
    return (
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {request_gib:.2f} GiB. "
        f"GPU 0 has a total capacity of {total_gib:.2f} GiB of which 0 bytes is free. Of the "
        f"allocated memory 10.00 GiB is allocated by PyTorch, and {idle_gib:.2f} GiB is reserved "
        "by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
    )


@pytest.mark.parametrize(
    ("request_gib", "idle_gib", "total_gib", "expected"),
    [
        (2.0, 4.0, 24.0, "cuda_oom_fragmentation"),  # idle reserve is twice the request
        (4.0, 2.0, 24.0, "cuda_oom"),  # idle reserve smaller than the request
        # Idle reserve at least the request but under the 256 MiB floor: the card was full.
        (0.02, 0.19, 24.0, "cuda_oom"),
        # Over the floor and over the request: judged against the request, not the card.
        (0.02, 0.30, 24.0, "cuda_oom_fragmentation"),
        (1.0, 1.0, 80.0, "cuda_oom"),  # equal, within rounding: not shown to be larger
    ],
)
def test_fragmentation_is_a_judgement_from_the_numbers_not_the_hint_text(
    request_gib: float, idle_gib: float, total_gib: float, expected: str
) -> None:
    # Every message carries the same "to avoid fragmentation" hint; only the numbers differ.
    text = _new_message(request_gib=request_gib, idle_gib=idle_gib, total_gib=total_gib)
    assert classify(text).cls == expected


def test_fragmentation_advice_names_expandable_segments() -> None:
    triage = classify(_new_message(request_gib=2.0, idle_gib=4.0, total_gib=24.0))
    assert any("expandable_segments:True" in a for a in triage.advice)


def test_request_larger_than_the_gpu_advises_quantisation_or_tensor_parallelism() -> None:
    triage = classify(_new_message(request_gib=120.0, idle_gib=1.0, total_gib=80.0))
    assert triage.cls == "cuda_oom"
    assert any("tensor parallelism" in a for a in triage.advice)


def test_other_processes_on_the_gpu_advise_mig_or_a_whole_gpu() -> None:
    text = (
        "CUDA out of memory. Tried to allocate 158.00 MiB. GPU 0 has a total capacity of 23.69 GiB "
        "of which 115.69 MiB is free. Process 21422 has 23.57 GiB memory in use."
    )
    assert any("MIG" in a for a in classify(text).advice)


def test_exit_137_alone_is_any_sigkill_not_a_memory_kill() -> None:
    # A liveness probe, an eviction or a preemption ends in the same SIGKILL.
    triage = classify("", exit_code=137)
    assert triage.cls == "killed_unknown"
    assert triage.family == "sigkill_cause_unknown"
    assert "exit code: 137" in triage.evidence
    assert any("kubectl describe pod" in a for a in triage.advice)
    assert any("journalctl -k" in a for a in triage.advice)
    assert any("events" in a for a in triage.advice)


def test_exit_137_after_a_failed_liveness_probe_is_not_an_oom() -> None:
    assert classify("", exit_code=137, liveness_failed=True).cls == "not_oom"
    assert classify("Liveness probe failed: HTTP probe failed", exit_code=137).cls == "not_oom"


def test_oomkilled_reason_is_a_memory_kill_even_with_a_failed_probe() -> None:
    assert classify("", reason="OOMKilled", liveness_failed=True).cls == "host_oom_killed"


def test_the_alerts_own_oomkilled_reason_is_a_memory_kill_with_empty_logs() -> None:
    triage = classify("", alert_reason="OOMKilled")
    assert (triage.cls, triage.family) == ("host_oom_killed", "kubelet_oomkilled")
    assert "alert reason: OOMKilled" in triage.evidence


def test_host_oom_advice_is_sized_from_the_killed_process_rss() -> None:
    triage = classify(
        "Out of memory: Killed process 1440763 (perl) total-vm:87033376kB, anon-rss:60356340kB"
    )
    assert triage.numbers["killed_rss_bytes"] == 60356340 * 1024
    assert "57.56 GiB" in triage.advice[0]


def test_shm_advice_mounts_a_memory_emptydir_sized_from_the_current_shm() -> None:
    triage = classify(
        "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
        "shared memory (shm).",
        shm_bytes=64 * 1024**2,
    )
    assert triage.cls == "shm_exhausted"
    assert "medium: Memory" in triage.advice[0]
    assert "sizeLimit: 1Gi" in triage.advice[0]


def test_as_json_shape() -> None:
    out = classify("", exit_code=137).as_json()
    assert set(out) == {
        "class",
        "family",
        "confidence",
        "workload",
        "evidence",
        "hints",
        "advice",
        "numbers",
    }
    assert out["class"] == "killed_unknown"
    assert out["confidence"] in ("high", "medium", "low")


def test_rules_end_with_a_catch_all_not_oom() -> None:
    last = RULES[-1].judge
    assert last is not None
    verdict = decide(gather("nothing to see", exit_code=None, reason=None))
    assert (verdict.cls, verdict.family, verdict.confidence) == (
        "not_oom",
        "no_memory_evidence",
        "low",
    )
    assert GiB == 1024**3
