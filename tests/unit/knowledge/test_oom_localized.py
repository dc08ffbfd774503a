"""Memory failures in other languages are read by family, and their lookalikes are not.

Each wording is a synthetic message as a tool prints it in its locale or as a reporter
translates it (not a corpus excerpt), with a lookalike that shares its words but is not that
failure.
"""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    ("text", "cls", "family"),
    [
        # The GPU's memory short, in Chinese, Japanese and Korean.
        ("训练到第3轮时报错\uff1a显存不足\uff0c请减小batch size", "cuda_oom", "gpu_oom_localized"),
        ("推理时 GPU 1 上内存不足\uff0c进程退出", "cuda_oom", "gpu_oom_localized"),
        ("错误\uff1a无法在GPU 2上分配 2.5GB 内存", "cuda_oom", "gpu_oom_localized"),
        ("CUDA: 没有内存", "cuda_oom", "gpu_oom_localized"),
        ("エラー: GPU のメモリ不足です", "cuda_oom", "gpu_oom_localized"),
        ("오류: GPU 메모리 부족", "cuda_oom", "gpu_oom_localized"),
        # ENOMEM as glibc words it in other locales, and GCC's "virtual memory exhausted".
        ("cc1plus: 致命错误\uff1a无法分配内存", "host_oom_killed", "host_allocation_refused"),
        ("bash: fork: メモリを確保できません", "host_oom_killed", "host_allocation_refused"),
        ("fork: Невозможно выделить память", "host_oom_killed", "host_allocation_refused"),
        (
            "bash: fork: Nicht genügend Hauptspeicher verfügbar",
            "host_oom_killed",
            "host_allocation_refused",
        ),
        (
            "cc1plus: out of memory: virtual memory exhausted",
            "host_oom_killed",
            "host_allocation_refused",
        ),
    ],
)
def test_memory_failures_in_other_languages_are_read(text: str, cls: str, family: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == (cls, family)
    assert triage.evidence


@pytest.mark.parametrize(
    "text",
    [
        "GPU 0上没有错误\uff0c训练完成",  # no error on GPU 0, training finished
        "显存充足\uff0c显存使用率 40%",  # video memory is plentiful
        "CPU内存不足\uff0cGPU空闲",  # the host's memory, not the GPU's
        "GPU 训练使用 RAM 时内存不足",  # RAM named: the host's memory
        "GPU显存够\uff0c但内存不足",  # the card's memory is enough, the host's is short
        "mlock: 无法分配内存 (memlock limit)",  # locked memory, not RAM exhausted
    ],
)
def test_lookalikes_in_other_languages_are_not_gpu_memory(text: str) -> None:
    assert classify(text).cls != "cuda_oom"


def test_locked_memory_refused_in_another_locale_is_not_host_memory() -> None:
    assert classify("mlock: 无法分配内存 (memlock limit)").cls != "host_oom_killed"
