"""The families of the eighty-third and eighty-fourth parts (local and self-hosted LLM apps;
shared memory across stacks and its lookalikes): each is read in its own words, and a
lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size "
        "68719476768\n",
        "ggml_aligned_malloc: insufficient memory (attempted to allocate 24000.50 MB)\n",
        "GGML_ASSERT: /src/llama.cpp/ggml.c:4411: ctx->mem_buffer != NULL\nAborted\n",
        "Loading checkpoint shards:   0%|   | 0/4\nI had to increase my pagefile to 64gb for it "
        "to work.\n",
    ],
)
def test_a_host_allocation_refused_in_these_words_is_host_memory(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_killed_printed_when_it_crashes_is_a_kill() -> None:
    text = "After a while it crashes with `Killed` printed to the terminal.\n"
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        "All of it is caused by /dev/shm being too limited under Docker.\n",
        "In Kubernetes, /dev/shm is restricted, so the renderer dies.\n",
        "The crash went away when I set shm_size: 1gb in the compose file.\n",
        'app.commandLine.appendSwitch("disable-dev-shm-usage"); to fix the problem\n',
    ],
)
def test_shared_memory_told_limited_or_cured_is_shm(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        "node3:112:140 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission "
        "denied\nnode3:112:140 [0] include/shm.h:48 NCCL WARN Error while creating shared memory "
        "segment nccl-shm-recv-1 (size 4460544)\n",
        "Unable to use multiprocessing, this is normally caused by lack of access to /dev/shm: "
        "[Errno 30] Read-only file system\n",
        "UCX  ERROR shmget(size=1044381696 flags=0xfb0) for uct_test failed: Operation not "
        "permitted, please check shared memory limits\n",
        "Warning: shm_attach(): failed for key 0x61019b9c: Too many open files in Memory.php\n",
        "ERROR:platform_shared_memory_region_posix.cc(214)] Creating shared memory in "
        "/tmp/.org.chromium.Chromium.x1 failed: No such process (3)\n",
    ],
)
def test_shared_memory_that_cannot_be_used_is_not_a_full_dev_shm(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "shm_not_usable")


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # NCCL's segment refused for space is still /dev/shm full.
        ("include/shm.h:48 NCCL WARN Error while creating shared memory segment\n", "not_oom"),
        # Advice about a limited /dev/shm, not a failure.
        ("If /dev/shm is limited, set --shm-size.\n", "shm_exhausted"),
        # A page file that did not help.
        ("I had to increase my pagefile but it still crashes.\n", "host_oom_killed"),
        # ggml's device buffer is the card's.
        (
            "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9000 MiB on device 0: "
            "cudaMalloc failed: out of memory\n",
            "host_oom_killed",
        ),
    ],
)
def test_lookalikes_are_not_read_as_these_families(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
