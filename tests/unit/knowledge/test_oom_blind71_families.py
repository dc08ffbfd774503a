"""The families of the seventy-first and seventy-second parts (LLM serving engines; multi-GPU
and multi-node training): each is read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "I run the model on four CPU-only VMs and I always get : Killed\n",
        "Saving the checkpoint results in the subprocess being killed.\n",
    ],
)
def test_a_kill_in_these_words_is_a_kill(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        "The trainer gets killed by out-of-memory handler, even with batch size 1.\n",
        "Killed\nSolved. Didn't have enough CPU memory.\n",
        "I encountered host OOM while the actor loads the model on 4 nodes.\n",
        "CPU OOM in the reward model stage\n",
        "As expected your system kills the process, as it consumes too much CPU memory.\n",
        "Every rank loads the full checkpoint, so the worker is OOM-killed during init.\n",
    ],
)
def test_a_host_kill_told_in_these_words_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_several_cards_out_of_memory_is_the_cards_memory() -> None:
    text = "Fine-tuning with torchrun on 4 gpus, and all 4 gpus are out of memory\n"
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        ("Do I get : Killed if the GPU is busy?\n", "host_oom_killed"),
        ("Can I hit host OOM if I raise the batch?\n", "host_oom_killed"),
        ("Killed\nSolved. Didn't have enough GPU memory.\n", "host_oom_killed"),
        ("All GPUs are out of sync after the restart\n", "cuda_oom"),
    ],
)
def test_lookalikes_are_not_read_as_these_families(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
