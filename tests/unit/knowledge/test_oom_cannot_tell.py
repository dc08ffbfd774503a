"""A log with memory words that no family explains gets "cannot tell", never "not an OOM"."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import LABELS, classify


@pytest.mark.parametrize(
    "text",
    [
        "worker 3: allocation failed, retrying later",
        "F0919 Allocator.h:83] Check failed: ptr Fail to allocate GPU memory 7168 bytes",
        "job 12 stopped: memory pressure on node gpu-4",
        "WARN OOM detected in stage 2",
    ],
)
def test_memory_words_without_a_family_say_cannot_tell_and_what_to_read(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family, triage.confidence) == (
        "cannot_tell",
        "memory_words_unexplained",
        "low",
    )
    assert triage.evidence == (text,), "it names what it saw"
    advice = " ".join(triage.advice)
    assert "kubectl describe pod" in advice, "and what to read next"
    assert "journalctl -k" in advice


def test_without_memory_words_the_answer_stays_not_an_oom_with_low_confidence() -> None:
    triage = classify("ValueError: expected 3 channels, got 4")
    assert (triage.cls, triage.confidence) == ("not_oom", "low")


@pytest.mark.parametrize(
    "text",
    [
        "Tip: if you get out of memory errors, lower the batch size.",
        "Hint: If you want to see a list of allocated tensors when OOM happens, add "
        "report_tensor_allocations_upon_oom to RunOptions.",
    ],
)
def test_advice_about_memory_is_not_a_sign_of_it(text: str) -> None:
    assert classify(text).cls == "not_oom"


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        (
            "NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct using shared memory",
            "not_oom",
        ),
        ("WARNING: the object store is using /tmp instead of /dev/shm", "not_oom"),
        ("ERROR: failed to map the shared memory segment for rank 3", "cannot_tell"),
        ("unable to create the queue in /dev/shm", "cannot_tell"),
    ],
)
def test_shared_memory_counts_as_a_memory_word_only_beside_a_failure(text: str, cls: str) -> None:
    assert classify(text).cls == cls


def test_a_known_failure_with_memory_words_is_named_not_doubted() -> None:
    # The words say memory, the family says what it is: a full disk, an illegal access.
    assert classify("torch.save failed: [Errno 28] No space left on device").family == "disk_full"
    assert classify("CUDA error: an illegal memory access was encountered").cls == "not_oom"


def test_cannot_tell_is_a_verdict_not_a_label() -> None:
    assert "cannot_tell" not in LABELS
