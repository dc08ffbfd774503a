"""The families of the fifty-fifth part (2019-2023 research and application repositories in
vision, speech and NLP): each is read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


def _oom(requested: str, total: str) -> str:
    return (
        f"torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate {requested}. GPU 0 "
        f"has a total capacity of {total} of which 7.95 GiB is free. Of the allocated memory "
        "8.13 GiB is allocated by PyTorch, and 8.94 MiB is reserved by PyTorch but "
        "unallocated.\n"
    )


def test_a_request_over_five_times_the_card_is_absurd() -> None:
    triage = classify(_oom("128.00 GiB", "23.65 GiB"))
    assert (triage.cls, triage.family) == ("not_oom", "absurd_request")


def test_a_request_under_three_times_the_card_is_a_real_oom() -> None:
    assert classify(_oom("60.00 GiB", "23.65 GiB")).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "cv2.error: OpenCV(4.6.0) alloc.cpp:73: error: (-4:Insufficient memory) Failed to "
        "allocate 4672512 bytes in function 'OutOfMemoryError'\n",
        "mxnet.base.MXNetError: src/storage/./cpu_device_storage.h:75: Failed to allocate CPU "
        "Memory\n",
    ],
)
def test_opencvs_and_mxnets_host_allocators_refusing_are_host_memory(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "host_allocation_refused")


def test_opencv_asked_for_hundreds_of_terabytes_is_absurd() -> None:
    text = (
        "error: (-4:Insufficient memory) Failed to allocate 512956604754240 bytes in function "
        "'OutOfMemoryError'\n"
    )
    assert classify(text).cls == "not_oom"


@pytest.mark.parametrize(
    "text",
    [
        "I am back. This error is caused by a lack of memory, the whole data is read at once.\n",
        "Killed\nThe problem was my RAM is not enough. On a bigger machine it worked fine.\n",
        "free memory drops from 10G to 400M and the system killed the training eventually\n",
    ],
)
def test_a_host_kill_told_by_its_cause_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_a_lack_of_gpu_memory_is_no_host_kill() -> None:
    text = "This error is caused by a lack of memory on the GPU.\n"
    assert classify(text).cls != "host_oom_killed"


def test_caffe2s_enforce_on_cuda_success_with_code_2_is_the_cards_memory() -> None:
    text = (
        "RuntimeError: [enforce fail at event_gpu.cc:17] error == cudaSuccess. 2 vs 0. Error "
        "at: event_gpu.cc:17: out of memory\n"
    )
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "I run it on the gpu, but it shows that the process  is killed\n",
        "If nobody else killed it, then your kernel killed the process.\n",
    ],
)
def test_a_kill_told_loosely_is_a_kill_of_unknown_cause(text: str) -> None:
    assert classify(text).cls == "killed_unknown"
