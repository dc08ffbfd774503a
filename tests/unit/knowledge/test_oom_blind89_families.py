"""The families of the eighty-ninth and ninetieth parts (kills told in people's words; PyTorch
OOMs and the kills beside them): each is read in its own words, and a lookalike beside it is
not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "Memory usage continues to increase, then an error message kill 9 is displayed.\n",
        "When memory reached the max(32G), it immediately be killed.\n",
        "The RAM memory was increasing while loading. Then as the consequence, it's got killed.\n",
        "Training model...\n[1]    12345 killed\nmemory and swap were fully occupied before it "
        "quit.\n",
        "Host memory utilization grows with each epoch and finally causes OOM.\n",
        "My CPU RAM (not GPU) usage is increasing every epoch, past the 32 gb installed, hence the "
        "system crashes.\n",
        "The kernel decided to kill the process when it went above the allowed memory threshold.\n",
        "DefaultCPUAllocator: Can't allocate memory: you tried to allocate 8589934592 bytes.\n",
    ],
)
def test_host_memory_in_these_words_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "Without any error, it was killed.\n",
        "It gets killed when loading the validation split.\n",
        "Running the notebook keeps crashing the kernel at the merge cell.\n",
        "collect() may quit silently, which cause the kernal crash.\n",
    ],
)
def test_a_kill_or_death_in_these_words_is_of_unknown_cause(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


def test_a_terabyte_request_told_in_a_title_is_absurd() -> None:
    text = "Solution for CUDA out of memory, trying to allocate 133792483MiB\n"
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "absurd_request")


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # A maintainer's best guess beside a kill is no finding.
        (
            "it was killed while loading.\nMy best guess is that your system runs out of RAM.\n",
            "host_oom_killed",
        ),
        # A killed process reported by a crash signal is the crash's, not a kill in prose.
        ("Finally, it was killed by signal: Segmentation fault\n", "killed_unknown"),
        # A request a card could hold is not absurd.
        ("CUDA out of memory, trying to allocate 20480MiB\n", "not_oom"),
        # The card's memory growing until the crash is not the host's.
        ("GPU memory usage is increasing until the system crashes.\n", "host_oom_killed"),
    ],
)
def test_lookalikes_are_not_read_as_these_families(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
