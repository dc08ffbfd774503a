"""The families of the fifty-ninth and sixtieth parts (scientific and HPC GPU users; threads in
other languages and from desktop applications): each is read in its own words, and a lookalike
beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "ERROR: CUFFTError(code 2, cuFFT failed to allocate GPU or CPU memory)\n",
        "Error: You do not have enough GPU memory available to train the selected model.\n",
        "[0 GeForce GTX 1060]  queueC=2[1]\nvkAllocateMemory failed -2\n",
        "RuntimeError: out of memory at /tmp/build/torch/lib/THC/generic/THCStorage.cu:66\n",
    ],
)
def test_the_cards_memory_in_a_librarys_or_applications_words(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        # Advice, not a report.
        "If you do not have enough GPU memory available to train, lower the batch size.\n",
        # Another Vulkan error code: -4 is VK_ERROR_DEVICE_LOST.
        "vkAllocateMemory failed -4\n",
    ],
)
def test_advice_and_other_vulkan_errors_are_no_gpu_oom(text: str) -> None:
    assert classify(text).cls != "cuda_oom"


def test_a_cuda_oom_named_as_what_did_not_happen_is_no_evidence() -> None:
    text = (
        "The training was killed at the last stage. If the card were full it would have said "
        "'CUDA out of memory' instead of killed.\n"
    )
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        "My simulation proces is killed always after the third frame.\n",
        "process being killed\nWhat should I check?\n",
        "When I start the fine stage it automatically killed my training.\n",
        "Usually this means the Linux kernel killed the process; check the journal.\n",
        'I run the converter on a big file and I get the error "killed".\n',
        'Al correrlo en la Raspberry, el proceso recibe un "Terminado (killed)" y sale.\n',
    ],
)
def test_a_kill_told_in_a_sentence_is_a_kill(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        "I keep getting my jobs killed by scheduler for OOM error on the big dataset.\n",
        "The submission was killed because of too much memory usage.\n",
        "Killed\nEvery epoch the loader will cause the memory to explode, past 90 G.\n",
        "Killed\nI had put memory limits in the compose file; I removed the mem limits and "
        "it fixed it.\n",
        "The out of VRAM message was misleading: the solution was increasing the Windows "
        "page file size to 64GB.\n",
    ],
)
def test_a_host_kill_told_by_its_cause_or_its_cure_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        # A guess at the page file, and the card's memory exploding, are not host kills.
        "Maybe the solution is increasing the Windows page file?\n",
        "Killed\nThe larger model will cause the GPU memory to explode.\n",
        "Killed\nI removed the mem limits but it still dies.\n",
    ],
)
def test_guesses_and_the_cards_memory_are_no_host_kill(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"
