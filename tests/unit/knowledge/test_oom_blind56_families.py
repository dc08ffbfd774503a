"""The families of the fifty-sixth part (forums, Q&A sites and repositories the corpus had
not reached): each is read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


def test_the_shell_said_to_have_displayed_killed_is_a_kill() -> None:
    text = 'It died twice. I believe the shell displayed "Killed" after the signal.\n'
    assert classify(text).cls == "killed_unknown"


def test_getting_cuda_oom_told_in_a_sentence_is_the_cards_memory() -> None:
    text = "While fine-tuning the model I am getting CUDA OOM even with batch size 1.\n"
    triage = classify(text)
    assert (triage.cls, triage.family) == ("cuda_oom", "gpu_oom_in_prose")


def test_advice_for_when_one_gets_cuda_oom_is_none() -> None:
    text = "If you are getting CUDA OOM, lower the batch size.\n"
    assert classify(text).cls != "cuda_oom"


def test_ram_growing_until_the_os_kills_the_process_is_a_host_kill() -> None:
    text = "RAM gradually increases during training and the process is killed by the OS\n"
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "memory_kill_in_prose")


def test_vram_growing_until_a_kill_is_no_host_kill() -> None:
    text = "GPU RAM grows every epoch and the process is killed by the OS\n"
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "E Memory_Allocation_Failure(EL0004): Failed to allocate memory requested by GE module.\n"
        "        Call rtMalloc fail, purpose: page caching, size:3221291008, device_id:0\n",
        "[ERROR] Memory_Allocation_Failure(EL0004): Failed to allocate memory.\n"
        "        allocate device memory failed.[FUNC:Init][FILE:memory_pool_manager.cc]\n",
    ],
)
def test_ascends_allocation_failure_over_its_device_allocator_is_the_npus_memory(
    text: str,
) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("cuda_oom", "ascend_device_alloc_failed")


def test_ascends_allocation_failure_alone_is_not_read_as_the_devices() -> None:
    text = "[ERROR] Memory_Allocation_Failure(EL0004): Failed to allocate memory.\n"
    assert classify(text).family != "ascend_device_alloc_failed"


def test_an_npus_memory_said_short_in_chinese_is_the_accelerators_memory() -> None:
    # "it is because the npu's memory ran short"
    text = (
        "RuntimeError: Ascend kernel runtime initialization failed.\n"
        "\u662f\u7531\u4e8enpu\u5185\u5b58\u4e0d\u8db3\u4e86\n"
    )
    assert classify(text).cls == "cuda_oom"


def test_a_dev_shm_partition_that_fills_up_is_shm() -> None:
    text = "After many restarts my `/dev/shm` tmpfs partition fills up, whatever its size.\n"
    assert classify(text).cls == "shm_exhausted"
