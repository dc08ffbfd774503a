"""The families of the sixty-ninth and seventieth parts (hosted ML platforms; data loading and
preprocessing): each is read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        'The Space shows "Runtime error Memory limit exceeded (32Gi)"\n',
        "Out of memory: malloc of size 524288 failed\n",
        " MemoryError                               Traceback (most recent call last)\n",
        "Evaluation was killed because of CPU OOM after 3000 steps.\n",
        "The system runs out of swap and the process is killed (OOM) with no traceback.\n",
        "Reading the clip the RAM usage builds up beyond 40 GB and the process gets killed.\n",
    ],
)
def test_host_memory_in_a_platforms_or_a_librarys_words_is_host_memory(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: Critical error in pipeline: CUDA allocation failed\n",
        "Error when executing Mixed operator decoders__Image encountered:\nCUDA allocation "
        "failed\n",
        "RuntimeError: nvjpegDecode failed: 5\n",
        "The graphics card memory kept growing with every batch and finally caused an OOM.\n",
    ],
)
def test_the_cards_memory_in_a_decoders_or_a_reporters_words_is_the_cards(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly\n",
        "RuntimeError: One of the subprocesses has abruptly died during map operation.\n",
        "I keep getting a message that the kernel is restarting automatically at this cell.\n",
        "RuntimeError: DataLoader worker (pid(s) 77) exited unexpectedly\n"
        "It's possible the machine ran out of RAM, but I did not log it.\n",
    ],
)
def test_a_worker_gone_with_no_cause_shown_is_a_kill_of_unknown_cause(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


def test_a_loader_worker_gone_beside_a_64m_dev_shm_and_its_cure_is_shared_memory() -> None:
    text = (
        "RuntimeError: DataLoader worker (pid(s) 76) exited unexpectedly\n"
        "This is because /dev/shm is at only 64M by default; the fix is passing --shm-size.\n"
    )
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        ("If the Space hits Memory limit exceeded, upgrade the hardware.\n", "host_oom_killed"),
        ("CUDA memory limit exceeded on the GPU\n", "host_oom_killed"),
        ("Out of memory: malloc of size 24 failed\n", "host_oom_killed"),
        ("RuntimeError: nvjpegDecode failed: 7\n", "cuda_oom"),
        ("DataLoader worker (pid(s) 12) exited unexpectedly with exit code 1\n", "killed_unknown"),
    ],
)
def test_lookalikes_are_not_read_as_these_families(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
