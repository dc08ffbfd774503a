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


_FILLER = "".join(f"step {n}: loss 0.{n}\n" for n in range(10))


@pytest.mark.parametrize(
    ("text", "family"),
    [
        (
            "worker 2: allocation failed for the prefetch buffer\n"
            + _FILLER
            + "OSError: [Errno 28] No space left on device: '/ckpt/epoch3.pt'",
            "disk_full",
        ),
        (
            "kernel: Memory pressure on node: oom kill threshold near\n"
            + _FILLER
            + "Warning  Unhealthy  kubelet  Liveness probe failed: HTTP probe failed",
            "liveness_probe_kill",
        ),
        (
            "WARN OOM detected in stage 2\n" + _FILLER + "Segmentation fault (core dumped)",
            "crash_signal",
        ),
    ],
)
def test_a_named_failure_beside_memory_words_it_does_not_explain_is_not_sure(
    text: str, family: str
) -> None:
    # Memory words far from the failure's own lines are not accounted for by it: the answer
    # keeps its cause but is never a confident "not an OOM", and cites the words it left over.
    triage = classify(text)
    assert (triage.cls, triage.family, triage.confidence) == ("not_oom", family, "low")
    assert any(line == text.splitlines()[0] for line in triage.evidence)


@pytest.mark.parametrize(
    ("text", "family", "confidence"),
    [
        # The failure's own message holds the memory words.
        ("java.lang.OutOfMemoryError: Java heap space", "java_heap", "high"),
        # Memory words printed around the failure are part of it.
        (
            "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n"
            " 1: 0xb09c10 node::Abort() [node]",
            "runtime_heap_limit",
            "high",
        ),
        (
            "OSError: [Errno 28] No space left on device: '/ckpt/epoch3.pt'\n"
            "hint: failed to allocate space for the checkpoint",
            "disk_full",
            "high",
        ),
    ],
)
def test_memory_words_that_are_the_failures_own_keep_its_confidence(
    text: str, family: str, confidence: str
) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family, triage.confidence) == ("not_oom", family, confidence)


def test_a_cuda_error_cuda_could_not_name_is_not_a_known_launch_failure() -> None:
    # A GPU-sharing layer's refused allocation can reach PyTorch only as this: never a
    # confident "not an OOM".
    for text in ("RuntimeError: CUDA error: unrecognized error code", "CUDA error: unknown error"):
        triage = classify(text)
        assert (triage.cls, triage.confidence) == ("not_oom", "low"), text
        assert triage.family != "cuda_launch_failure"
    assert classify("RuntimeError: CUDA error: invalid device ordinal").family == (
        "cuda_launch_failure"
    )


def test_a_failure_beside_unexplained_memory_words_says_what_to_read_next() -> None:
    text = "WARN OOM detected in stage 2\n" + _FILLER + "Segmentation fault (core dumped)"
    advice = " ".join(classify(text).advice)
    assert "not a confident 'not an OOM'" in advice
    assert "journalctl -k" in advice
    alone = " ".join(classify("Segmentation fault (core dumped)").advice)
    assert "journalctl -k" not in alone
