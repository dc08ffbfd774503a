"""The sixteenth part's four families fixed so far: vLLM's profile leaving the KV cache a
negative share, a notebook service's "ran out of RAM", a memory shortage said in Chinese,
Japanese or Korean beside the kill it explains, and ENOSPC within a few lines of the cure for
a small /dev/shm. Each is read, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


def test_a_kv_cache_left_a_negative_share_is_a_gpu_oom() -> None:
    text = (
        "model weights take 7.10GiB; PyTorch activation peak memory takes 1.20GiB; the rest of "
        "the memory reserved for KV Cache is -0.50GiB.\n"
    )
    assert classify(text).cls == "cuda_oom"


def test_a_kv_cache_with_a_positive_share_is_not_an_oom() -> None:
    text = "the rest of the memory reserved for KV Cache is 12.30GiB.\n"
    assert classify(text).cls != "cuda_oom"


def test_a_notebook_that_ran_out_of_ram_is_host_memory() -> None:
    assert classify("Colab says the session ran out of RAM and restarts.\n").cls == (
        "host_oom_killed"
    )


def test_running_out_of_vram_is_not_host_memory() -> None:
    assert classify("the card ran out of VRAM while decoding\n").cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "failed (exitcode: -9) local_rank: 0\n\n就是内存太小了 换了机器就好了\n",
        "Killed\nメモリが足りないのが原因でした\n",
    ],
)
def test_a_memory_shortage_in_another_language_beside_a_kill_is_host_memory(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        # a guess between the host's memory and the GPU's
        "killed\n可能是内存不足或者显存不足\n",
        # no kill beside it
        "内存不足的话可以减小 batch size\n",
    ],
)
def test_a_guess_or_no_kill_is_not_a_host_kill(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


def test_enospc_with_the_cure_for_a_small_dev_shm_nearby_is_shm() -> None:
    text = (
        "OSError: No space left on device\n\nplenty of disk left.\n\n"
        "Docker's default shm is 64MB: run it with --ipc=host or --shm-size=8g.\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.confidence) == ("shm_exhausted", "medium")


def test_enospc_on_a_disk_path_with_that_cure_nearby_is_not_shm() -> None:
    text = (
        "OSError: [Errno 28] No space left on device: '/data/out/model.bin'\n"
        "(unrelated: we also run with --ipc=host)\n"
    )
    assert classify(text).cls != "shm_exhausted"
