"""The families of the twenty-first part (threads in Chinese and from Chinese model repositories):
each is read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


def test_an_allocator_message_wrapped_over_four_lines_is_read_whole() -> None:
    # 2.00 GiB reserved and idle (10.00 - 8.00) against a 512 MiB request: fragmentation,
    # told only by the numbers on the message's third line.
    text = (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0;\n"
        "15.77 GiB total capacity; 8.00 GiB already allocated; 20.00 MiB free; 10.00 GiB\n"
        "reserved in total by PyTorch) If reserved memory is >> allocated memory try\n"
        "setting max_split_size_mb to avoid fragmentation.\n"
    )
    assert classify(text).cls == "cuda_oom_fragmentation"


def test_a_wrapped_message_with_little_idle_reserve_is_a_plain_oom() -> None:
    text = (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0;\n"
        "15.77 GiB total capacity; 8.00 GiB already allocated; 20.00 MiB free; 8.10 GiB\n"
        "reserved in total by PyTorch)\n"
    )
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "\u8bad\u7ec3\u5230\u4e00\u534a\u5c31\u51fa\u73b0Killed\n",  # "... then Killed appears"
        "\u7a0b\u5e8f\u4f1a\u88abKilled\u6389\n",  # "the program gets Killed"
        "\u603b\u662f\u9000\u51fa\uff08killed\uff09\n",  # "always exits (killed)"
        "deepspeed \u8fd4\u56de\u9519\u8bef\u7801-9\n",  # "returns error code -9"
        "Killed!!\n",
    ],
)
def test_a_kill_told_in_a_chinese_sentence_is_a_kill(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


def test_a_chinese_sentence_about_killing_a_process_by_hand_is_not_a_kill() -> None:
    assert classify("\u8bf7\u5148 kill \u6389\u65e7\u8fdb\u7a0b\n").cls != "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        "mem\u4f1a\u7528\u5b8c\uff0c\u5e76\u81ea\u52a8kill\n",  # "mem gets used up, then kill"
        # "memory use keeps growing, then the process is Killed"
        "\u5185\u5b58\u4f1a\u5360\u7528\u8d8a\u6765\u8d8a\u591a\uff0c\u4ece\u800c\u8fdb\u7a0b"
        "\u88abKilled\n",
    ],
)
def test_host_memory_filling_up_then_a_kill_in_chinese_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        # the card's memory ("显存") filling up
        "\u663e\u5b58\u4f1a\u7528\u5b8c\uff0c\u5e76\u81ea\u52a8kill\n",
        # a guess: "looks like not enough memory" beside a kill
        "Killed\n\u770b\u62a5\u9519\u50cf\u662f\u5185\u5b58\u4e0d\u591f\n",
    ],
)
def test_the_cards_memory_or_a_guess_is_not_a_host_kill(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"
