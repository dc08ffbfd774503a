"""The families of the eighty-fifth and eighty-sixth parts (Windows and macOS desktop users of
GPU apps; scientific and simulation codes): each is read in its own words, and a lookalike
beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "After loading it closes without a word.\nMy pagefile was a small pagefile size. Fixed "
        "after raising it.\n",
        "Epoch 3: 100%|####| 50/50\nkilled;\nI watched my RAM reach the limit of 31.9 GB.\n",
        "The job ends with KILLED BY SIGNAL 9. The memory usage of the run exceeds the memory "
        "allocated by the queue.\n",
        "I run it using the CPU platform with 64 GB of RAM.\njaxlib.xla_extension.XlaRuntimeError: "
        "RESOURCE_EXHAUSTED: Out of memory allocating 98867611608 bytes.\n",
    ],
)
def test_host_memory_in_these_words_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "When planning the transforms it was found that the available GPU memory was "
        "insufficient.\n",
        "I ran the density estimate and had an out of memory error via CUDA.\n",
    ],
)
def test_the_cards_memory_told_in_these_words_is_a_cuda_oom(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    ("text", "family"),
    [
        (
            "ERROR: No Heartbeat\nThis job was killed because a heartbeat was not received for "
            "60 seconds.\n",
            "stop_requested",
        ),
        (
            "[host:0141] create_and_attach: unable to create shared memory BTL coordinating "
            "structure :: size 134217728\n",
            "shm_not_usable",
        ),
    ],
)
def test_these_stops_and_warnings_are_not_memory(text: str, family: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", family)


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # XLA on the GPU is the card's, however the host is described.
        (
            "2 A100s, 512 GB of host RAM\njaxlib.xla_extension.XlaRuntimeError: "
            "RESOURCE_EXHAUSTED: Out of memory allocating 98867611608 bytes.\n",
            "host_oom_killed",
        ),
        # A page file raised that did not help; memory that did not reach its limit.
        ("I had a low pagefile value, but raising it did not help.\n", "host_oom_killed"),
        ("killed;\nmemory never reached the limit.\n", "host_oom_killed"),
        # A heartbeat warning beside a kill does not explain the kill.
        ("WARNING: heartbeat delayed by 12 seconds\nKilled\n", "not_oom"),
    ],
)
def test_lookalikes_are_not_read_as_these_families(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
