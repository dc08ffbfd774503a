"""The families of the seventy-ninth and eightieth parts (GPU out of memory in the newest
stacks; reports in other languages): each is read in its own words, and a lookalike beside it
is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "every third clip I get Allocation on device at the VAE decode step\n",
        "With sharding set to 2, OOM happens at step two; torch.cuda.max_memory_allocated "
        "reports 70 GB.\n",
        "\u8fd9\u4e2a\u6a21\u578b\u6700\u5c11\u8981\u6c4240G\u663e\u5b58\uff0c\u4f60\u53ea\u6709"
        "16G\n\u62a5\u9519 OOM\n",
        "W/Adreno-GSL: <sharedmem_gpuobj_alloc:120>: sharedmem_gpumem_alloc: mmap failed errno "
        "12 Out of memory\n",
    ],
)
def test_the_cards_memory_told_in_these_words_is_a_cuda_oom(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "The export eats up all of my system memory for a 2 minute clip.\n",
        "You do not have enough host RAM for the fp32 weights.\n",
        # Host memory rising while the card's stays flat, beside the failure (in Chinese).
        "\u62a5\u5185\u5b58\u4e0d\u8db3\n\u5185\u5b58\u5360\u7528\u4e00\u76f4\u5728\u589e\u52a0"
        "\uff0c\u663e\u5b58\u6ca1\u6709\u53d8\u5316\n",
    ],
)
def test_host_memory_told_in_these_words_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "The /dev/shm usage reaches 100% after a week of logs.\n",
        "The default /dev/shm space for containers is only 64MB and it is used up by the cache.\n",
        # "... because /dev/shm lacks free space" (in Chinese).
        "\u8fd9\u662f\u7531\u4e8e /dev/shm \u7684\u53ef\u7528\u7a7a\u95f4\u4e0d\u8db3\u5bfc\u81f4"
        "\u7684\n",
    ],
)
def test_shared_memory_told_full_is_shm(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


def test_kill_the_process_in_chinese_is_a_kill() -> None:
    # "Every time, after this line, it kills the process."
    text = "\u6bcf\u6b21\u90fd\u662f\u5728\u8fd9\u4e00\u53e5\u4e4b\u540ekill\u8fdb\u7a0b\n"
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # cudaMallocAsync's own wording keeps its own family; advice is not an OOM.
        ("If you see Allocation on device, lower the resolution.\n", "host_oom_killed"),
        ("OOM happens when the batch is too big?\n", "cuda_oom"),
        # The card's memory used up, not the host's.
        ("It consumed all of my GPU memory.\n", "host_oom_killed"),
        # /dev/shm advice, not a full one.
        ("If the /dev/shm usage reaches 100% the loader stalls.\n", "shm_exhausted"),
    ],
)
def test_lookalikes_are_not_read_as_these_families(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
