"""The families of the seventy-fifth to seventy-eighth parts (Kubernetes and cloud GPU
operations; HPC schedulers and workflow engines; kills told in the reporter's words; LLM
fine-tuning and conversion): each is read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        # Notebook sessions crashing with their RAM used up.
        "My Kaggle notebook crashes due to RAM overuse when the embeddings are built.\n",
        "The script consumed all available RAM, leading to a kernel crash.\n",
        "Runtime keeps crashing: exhausted the RAM at the join step.\n",
        "Colab says all RAM has been consumed and restarts.\n",
        # RAM, not the card, named as what ran out.
        "Training on a T4 gives OOM (RAM, not VRAM) after epoch 2.\n",
        "Reading the shards is causing host OOMs on every worker.\n",
        "I get OOM as soon as stage two starts and usage reaches 250GB (on the CPU).\n",
        # A pod OOMed, a limit too small, a scheduler's limit, a rank dying of OOM.
        "Our worker pod never comes back after it was OOMed.\n",
        "It turned out the memory limit of 256Mi was too small for the unpacking.\n",
        "All my tasks were killed because they reached the memory limit.\n",
        "When one rank dies due to an out of memory error the others hang.\n",
        "The jobs were kicked out with `out of memory` error messages.\n",
        "the api server is oom-killed by kubernetes.But why does it not refuse big batches?\n",
        # The kill and its cause, told and confirmed.
        "It stops at 3/7 and exits.\nProbably the process being killed because you're out of "
        "memory?\nyep, that was it - a bigger box works.\n",
        "python merge.py\nKilled\nthe RAM grows until it is completely full.\n",
        "my script will get kill on the 16G laptop\nthat is because you do not have enough CPU "
        "RAM for the export\n",
        'it always popup "killed" message\nYes, it is due to insufficient memory.\n',
        "cc1plus: fatal error: Killed signal terminated program cc1plus\nI added 4g of swap, it "
        "works now\n",
        "g++: fatal error: Killed signal terminated program cc1plus\nIncreasing the RAM helped.\n",
        "it says killed after the weights load (WSL2)\nYou have to set it in the .wslconfig\n",
        # earlyoom's lines without its name.
        "Mar 3 10:01:02: low memory! at or below SIGTERM limits: mem 10.00%, swap 10.00%\n",
        'sending SIGTERM to process 4242 uid 1000 "python3": badness 900, VmRSS 7000 MiB\n',
        # A host allocation refused by a C program's wrapper, or R's.
        "[bseq_read] Failed to allocate 4096 bytes at kstring.c line 12: Out of memory\n",
        "Evaluation error: cannot allocate buffer.\n",
    ],
)
def test_a_host_kill_told_in_these_words_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "OutOfMemoryError                          Traceback (most recent call last)\n"
        "Cell In[4], line 1\n",
        "We still hit OOM on four 80G H100 GPUs while loading the checkpoint.\n",
        "Memory grows at every call until the GPU memory is exhausted.\n",
        "The run died; the GPU memory was nearly full because another job held it.\n",
    ],
)
def test_the_cards_memory_told_in_these_words_is_a_cuda_oom(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "I resolved this in my compose file by increasing the shm-size to 4gb.\n",
        "Changing shm_size solved it for me.\n",
        "After increasing the size of /dev/shm, the all_reduce test was working.\n",
        "The job crashes because the shared memory in my Apptainer container is not enough.\n",
    ],
)
def test_shared_memory_told_too_small_or_cured_is_shm(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        "My process get killed in the pod with no message at all.\n",
        "i get killed process error at the validation step\n",
        "the program will get kill after a few minutes\n",
        "Process `align (3)` terminated for an unknown reason -- Likely it has been terminated by "
        "the external system\n",
        "NOTE: Process `sort (S1)` terminated with an error exit status (140) -- Execution is "
        "retried (1)\n",
        '"Kernel Restarting" every time the second cell runs.\n',
    ],
)
def test_a_kill_in_these_words_is_a_kill_of_unknown_cause(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # The card, not the host, said to have run out; a guess from googling; a question.
        ("The notebook crashes due to GPU memory overuse.\n", "host_oom_killed"),
        (
            "Best I can tell from googling, the runner container is being OOMed.\n",
            "host_oom_killed",
        ),
        ("Is the pod OOMed when the limit is too small?\n", "host_oom_killed"),
        ("If the memory limit is too small the pod restarts.\n", "host_oom_killed"),
        # A cure that did not work, or one only suggested.
        ("I increased the shm-size but it still fails.\n", "shm_exhausted"),
        ("Could you try fixing it by increasing the shm-size?\n", "shm_exhausted"),
        # A checklist row that found no OOM kill ("OOM 杀进程 | 无 oom-kill | 没发生").
        (
            "| OOM \u6740\u8fdb\u7a0b | \u65e0 `oom-kill` | \u6ca1\u53d1\u751f |\n",
            "host_oom_killed",
        ),
        # The card's OOM advised against, and a GPU-side wording of the sizes.
        ("To avoid OOM on two A100 GPUs, use FSDP.\n", "cuda_oom"),
        ("Failed to allocate 4096 bytes on device 0\n", "host_oom_killed"),
    ],
)
def test_lookalikes_are_not_read_as_these_families(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
