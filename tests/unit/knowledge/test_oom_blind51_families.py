"""The families of the fifty-first part (model serving and ML platforms on Kubernetes and in
containers): each is read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "Under load the server container reaches its limit and is eventually killed due to "
        "OOM. I wonder what may be the reason.\n",
        "Loading the index kills the pod on OOM. Should streaming not avoid that? If not, what "
        "can we do?\n",
    ],
)
def test_a_kill_for_oom_in_one_sentence_of_a_paragraph_is_a_host_kill(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "memory_kill_in_prose")


def test_the_cards_memory_in_the_kills_own_sentence_is_no_host_kill() -> None:
    text = "The trainer is killed due to OOM on the GPU side. We tried fewer workers.\n"
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "ValueError: Available memory on node 0 (40.00/512.00 GiB) on kv cache allocation is "
        "less than requested memory for kv (64.00/65.00 GiB).\n",
        "ERROR: Create Version failed. Bad model detected with error: Model requires more "
        "memory than allowed.\n",
    ],
)
def test_a_servers_own_check_of_host_memory_is_host_memory_short(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "host_memory_precheck")


def test_a_check_of_the_cards_memory_is_not_the_hosts() -> None:
    text = "Model requires more GPU memory than allowed on this instance type.\n"
    assert classify(text).cls != "host_oom_killed"


def test_trt_llms_paged_kv_cache_too_small_is_the_cards_memory() -> None:
    text = (
        "[TensorRT-LLM][ERROR] maxTokensInPagedKvCache (4096) must be large enough to process "
        "at least 1 sequence to completion\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("cuda_oom", "inference_kv_cache")


@pytest.mark.parametrize(
    "text",
    [
        "OSError: It seems you use Memory File System and you don't have enough available "
        "space in `dev/shm`.\n",
        "INFO: Pandarallel will use Memory file system to transfer data between the main "
        'process and workers.\n  File "core.py", line 263, in closure\n'
        "OSError: [Errno 28] No space left on device\n",
    ],
)
def test_pandarallels_memory_file_system_full_is_shm(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


def test_enospc_without_pandarallels_announcement_is_not_shm() -> None:
    text = "INFO: writing shards\nOSError: [Errno 28] No space left on device\n"
    assert classify(text).cls != "shm_exhausted"


def test_tritons_pool_falling_back_to_pinned_memory_is_no_oom() -> None:
    text = (
        "W0101 00:00:00.000 pinned_memory_manager.cc] Failed to allocate CUDA memory with byte "
        "size 536870912 on GPU 0, falling back to pinned system memory\n"
    )
    assert classify(text).cls != "cuda_oom"


def test_an_oom_beside_a_model_needing_more_of_the_card_is_the_cards_memory() -> None:
    text = (
        "I still get an OOM error on the 24GB card.\n"
        "The model requires at least 40GB GPU RAM to run.\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("cuda_oom", "gpu_oom_in_prose")


def test_a_models_need_stated_without_an_oom_is_none() -> None:
    text = "The model requires at least 40GB GPU RAM to run; we use an A100.\n"
    assert classify(text).cls != "cuda_oom"
