"""The families of the fifty-second part (threads written in Chinese, Korean and other
languages about ML and HPC tools): each is read in its own words, and a lookalike beside it
is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify

# The Chinese and Korean sentences below, word for word in English: "after loading, memory
# was full and the program was killed at once"; "training was suddenly killed" over "the
# memory leak problem, found and fixed"; "it dies of oom when it asks for more memory than it
# was given"; "killed because of OOM"; "it is Killed every time at 38 %".
MEMORY_FULL_THEN_KILLED = (
    "\u8f7d\u5165\u540e\u5185\u5b58\u6ee1\u4e86\uff0c\u7a0b\u5e8f\u7acb\u9a6c\u88ab\u6740\u4e86\n"
)
KILLED_THEN_LEAK = (
    "\u8bad\u7ec3\u8fc7\u7a0b\u4e2d\u7a0b\u5e8f\u7a81\u7136\u88ab\u6740\u6b7b\n"
    "\u5185\u5b58\u6cc4\u6f0f\u95ee\u9898\uff0c\u5df2\u7ecf\u4fee\u597d\u4e86\n"
)
DIES_OF_OOM_KO = (
    "\ud560\ub2f9\ub41c \uba54\ubaa8\ub9ac\ubcf4\ub2e4 "
    "\ub354 \ub9ce\uc740 \uba54\ubaa8\ub9ac\ub97c "
    "\uc694\uad6c\ud558\uba74 oom\uc73c\ub85c \uc8fd\uac8c\ub429\ub2c8\ub2e4.\n"
)
KILLED_FOR_OOM_ZH = "\u8bad\u7ec3\u56e0\u4e3aOOM\u88ab\u6740\u4e86\n"
KILLED_EVERY_TIME = "\u6bcf\u6b21\u52a0\u8f7d\u5230 38% \u90fd\u4f1aKilled\u3002\n"


@pytest.mark.parametrize(
    "text", [MEMORY_FULL_THEN_KILLED, KILLED_THEN_LEAK, DIES_OF_OOM_KO, KILLED_FOR_OOM_ZH]
)
def test_a_host_kill_told_in_chinese_or_korean_is_a_host_kill(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "memory_kill_in_prose")


@pytest.mark.parametrize(
    "text",
    [
        # "maybe it died of OOM?" and "video memory leak" beside a kill: a guess, the card.
        "\ud639\uc2dc oom\uc73c\ub85c \uc8fd\uc740 \uac78\uae4c\uc694?\n",
        "\u7a0b\u5e8f\u88ab\u6740\u6b7b\n\u663e\u5b58\u6cc4\u6f0f\u95ee\u9898\n",
    ],
)
def test_a_question_or_the_cards_leak_is_no_host_kill(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


def test_the_shells_killed_after_a_chinese_every_time_is_a_kill() -> None:
    assert classify(KILLED_EVERY_TIME).cls == "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        "ResourceExhaustedError: Fail to alloc memory of 564023296 size, error code is 12.\n",
        "ResourceExhaustedError: Fail to alloc memory of 5060694016 size.\n",
    ],
)
def test_paddles_host_allocator_refusing_is_host_memory(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "host_allocation_refused")


def test_mindsporess_device_pool_over_its_total_is_the_devices_memory() -> None:
    text = (
        "[ERROR] PRE_ACT(1,f,python):2024-01-01 [mem_dynamic_allocator.cc:392] "
        "AddMemBlockAndMemBufByEagerFree] TotalUsedMemStatistics : 31000000000 plus "
        "TotalUsedByEventMemStatistics : 0 and plus alloc size : 400000000 is more than total "
        "mem size : 31138512896.\nSegmentation fault (core dumped)\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("cuda_oom", "mindspore_device_pool")


def test_pinned_host_memory_refused_on_the_line_is_not_the_cards() -> None:
    text = "[ERROR] MD arena.cc:250] Init] cudaHostAlloc failed, ret[2], out of memory\n"
    assert classify(text).cls != "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "/dev/shm\u7528\u6ee1\u5bfc\u81f4\u65e0\u6cd5\u7ee7\u7eed\u8fd0\u884c\n",
        "\u673a\u5668\u7684/dev/shm\u7a7a\u95f4\u5360\u7528100%\n",
    ],
)
def test_dev_shm_filled_told_in_chinese_is_shm(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


def test_a_process_said_to_hold_more_than_any_card_with_room_free_is_a_broken_count() -> None:
    text = (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 214.00 MiB. GPU 0 "
        "has a total capacity of 22.00 GiB of which 19.50 GiB is free. Including non-PyTorch "
        "memory, this process has 17179869184.00 GiB memory in use. Of the allocated memory "
        "1.32 GiB is allocated by PyTorch, and 1.93 MiB is reserved by PyTorch but "
        "unallocated.\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "broken_memory_accounting")
    assert "broken count" in " ".join(triage.advice)


def test_the_same_count_on_a_full_card_is_still_an_oom() -> None:
    text = (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 "
        "has a total capacity of 24.00 GiB of which 0 bytes is free. Including non-PyTorch "
        "memory, this process has 17179869184.00 GiB memory in use. Of the allocated memory "
        "23.01 GiB is allocated by PyTorch, and 1.23 MiB is reserved by PyTorch but "
        "unallocated.\n"
    )
    assert classify(text).cls == "cuda_oom"
