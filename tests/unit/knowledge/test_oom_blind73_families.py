"""The families of the seventy-third and seventy-fourth parts (AMD GPUs and ROCm; computer
vision repositories): each is read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


def test_ggmls_rocm_out_of_memory_is_the_cards() -> None:
    text = "ROCm error: out of memory\n  in function ggml_cuda_device_malloc at ggml-cuda.cu:421\n"
    assert classify(text).cls == "cuda_oom"


def test_xlas_lds_limit_on_rocm_is_a_kernels_limit() -> None:
    text = (
        "RESOURCE_EXHAUSTED: Shared memory size limit exceeded: requested 98304, available: 65536\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "kernel_shared_memory_limit")


@pytest.mark.parametrize(
    "text",
    [
        "[>>>>>>>>>>>>>>>>>>>>>    ] 3000/3849, 4.0 task/s, elapsed: 700s, ETA:   157s"
        "\u5df2\u6740\u6b7b\n",
        "It made two checkpoints and then it killed again.\n",
        "\u5f00\u59cb\u8bad\u7ec3\u540e\u4e0d\u4e45\u81ea\u5df1kill\u4e86\n",
        "During caching it stops at 77%. It displays a '^C' though Ctrl+C was not pressed.\n",
    ],
)
def test_a_kill_in_these_words_is_a_kill(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        "Docker run detector report error:Killed, OOM\n",
        'Some images work, but with others I get a "Killed" message.\nDocker memory issue.\n',
        "It killed again after 3 lines.\nI've solved with the swap, 10GB of images on 8GB RAM.\n",
        "The memory usage (not GPU memory) grows each step; after 2 epochs it runs out of 188GB "
        "memory.\n",
        "\u8bad\u7ec3\u4e00\u534a\u4e4b\u540e\u7cfb\u7edf\u5185\u5b58\u6ee1\u4e86\uff0c"
        "\u7136\u540e\u7a0b\u5e8f\u88ab\u7ec8\u6b62\n",
        "\u76f4\u63a5\u88ab\u6740\u7684\u786e\u662f\u5185\u5b58\u5c31\u8d85\u4e86\n",
    ],
)
def test_a_host_kill_told_in_these_words_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        ("The GPU runs out of 24GB memory at 1024 px.\n", "host_oom_killed"),
        ("Killed\nGPU memory issue.\n", "host_oom_killed"),
        # The card's memory full, in Chinese ("显存满了然后程序被终止").
        (
            "\u663e\u5b58\u6ee1\u4e86\uff0c\u7136\u540e\u7a0b\u5e8f\u88ab\u7ec8\u6b62\n",
            "host_oom_killed",
        ),
        ("ROCm error: invalid device function\n", "cuda_oom"),
    ],
)
def test_lookalikes_are_not_read_as_these_families(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
