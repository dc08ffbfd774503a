"""The families of the hundred-and-third to hundred-and-fifth parts (GPU platform incidents;
posts in other languages and unusual pastes; accelerators other than CUDA): each is read in
its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "After the last epoch it gave an oom error on the cpu side.\n",
        "Without the fix, observe an OOMKill of the controller.\n",
        "Frequent CPU OOM / Process Killed after a few hundred steps\n",
        "Loading on eight cards will trigger system OOM while the weights load.\n",
        "The swap memory grows with every epoch until crashing.\n",
        # The OOM killer named in Chinese and in Korean.
        "\u8bad\u7ec3\u51e0\u4e2a\u5c0f\u65f6\u540e\u51fa\u73b0 OOM killer "
        "\u5931\u8d25\u9000\u51fa\n",
        "OOM(Out of Memory)\uc73c\ub85c \uc778\ud55c process kill\uc758 "
        "\ud754\uc801\uc774 \uc788\uc2b5\ub2c8\ub2e4\n",
        # A kill, and the cure that worked.
        "Killed\nIt was the container's memory. I gave it 4GB, which seemed to be enough.\n",
    ],
)
def test_a_host_kill_told_or_cured_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "The serving pods show frequent GPU OOM errors when new models are loaded.\n",
        "Setting the utilization to 0.9 would cause OOM for a GPU node with 8x40G.\n",
        "Yes, it runs out of memory on GPU with the full-size frames.\n",
        "Training fails with an HBM OOM at batch size 32 on the v4 pod.\n",
        "RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::"
        "1073741824 (1024)MB\n",
        '"Not enough video memory" appears after ten minutes.\n',
        # Reported in Chinese beside the card's memory.
        "\u4f7f\u7528 3090 \u63a8\u7406\u65f6\u62a5\u9519OOM\n\u663e\u5b58\u53ea\u6709 24G\n",
    ],
)
def test_the_accelerators_memory_told_is_a_gpu_oom(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


def test_an_xpu_request_over_the_cap_on_a_full_card_is_exhaustion() -> None:
    text = (
        "XPU out of memory. Tried to allocate 6.00 GiB (GPU 0; 15.11 GiB total capacity; "
        "13.00 GiB already allocated; 13.50 GiB reserved in total by PyTorch)\n"
    )
    assert classify(text).cls == "cuda_oom"


def test_an_xpu_request_over_the_cap_on_an_empty_card_is_the_cap() -> None:
    text = (
        "XPU out of memory. Tried to allocate 6.00 GiB (GPU 0; 15.11 GiB total capacity; "
        "1.00 GiB already allocated; 1.50 GiB reserved in total by PyTorch)\n"
    )
    assert classify(text).cls == "not_oom"


def test_a_crash_for_want_of_posix_shared_memory_is_shared_memory() -> None:
    text = "The workers crash whenever Postgres needs more than 64MB of POSIX shared memory.\n"
    assert classify(text).cls == "shm_exhausted"


def test_a_reported_shell_kill_is_a_kill_of_unknown_cause() -> None:
    assert classify("I have a problem of getting Killed suddenly.\n").cls == "killed_unknown"


def test_an_interpreters_own_allocation_cap_is_not_an_oom() -> None:
    text = (
        "Fatal: [spring_lua_alloc_log_error][handle=LuaRules][OOM] synced=1 "
        "{alloced,maximum}={2684354821,2684354560}bytes\n"
    )
    assert classify(text).cls == "not_oom"


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # Host memory named in the Chinese sentence is not the card's.
        ("\u8bad\u7ec3\u65f6\u62a5\u9519OOM\uff0c\u5185\u5b58 64G\n", "cuda_oom"),
        # A condition, not a report.
        ("If you get frequent GPU OOM errors, lower the batch size.\n", "cuda_oom"),
        # A guess is not a report.
        ("It may trigger system OOM when the shards load.\n", "host_oom_killed"),
        # A cure that did not work is not a cure.
        ("Killed\nI gave it 4GB, but it was still not enough.\n", "host_oom_killed"),
    ],
)
def test_lookalikes_are_not_read_as_the_family(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
