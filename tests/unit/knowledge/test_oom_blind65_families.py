"""The families of the sixty-fifth and sixty-sixth parts (LLM, RAG and audio applications;
generative video, 3D and medical imaging): each is read in its own words, and a lookalike
beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "An indexer on the cluster was **OOM-killed at a 2 GB pod limit** while embedding.\n",
        "Reader jobs can be OOM-killed under a 1G limit and show up only as retries\n",
        "Killed\nEval killed because out of memory on the 16 GB box\n",
        'At step 300 the terminal wrote "Killed" because out of memory for the RAM.\n',
        "When I try to train: OSError: [WinError 8] Not enough storage is available to process "
        "this command\n",
        "I simply get a Killed message and it stops.\nSolved it by adding more memory.\n",
        "RuntimeError: DataLoader worker (pid 77) is killed by signal: Killed.\n"
        "\u67e5\u770b\u5185\u5b58\u76f4\u63a5\u7206\u6389\u4e86\n",
        "The training process will be killed in the middle of the epoch.\n"
        "If I understand correctly it is killed due to insufficient memory.\n"
        "Yeah, you are right, the images do not fit in RAM.\n",
    ],
)
def test_a_host_kill_told_in_these_words_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        'After a few epochs the terminal will display "killed" without any message.\n',
        "Summoning checkpoint.\nKilled\n`killed` usually means you ran out of system memory.\n",
        # A hedged guess in Chinese beside the kill ("feels like the memory blew up").
        "\u8f6c\u6362\u76f4\u63a5\u88abkilled\n\u611f\u89c9\u5185\u5b58\u7206\u4e86\n",
    ],
)
def test_a_kill_with_only_a_guess_or_a_general_rule_is_of_unknown_cause(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


def test_dev_shm_too_small_for_the_job_is_shared_memory() -> None:
    text = "default /dev/shm too small on podman to train a new voice.\n"
    assert classify(text).cls == "shm_exhausted"


def test_docker_inspects_exit_139_beside_oomkilled_false_is_a_crash() -> None:
    text = '"State": {\n    "OOMKilled": false,\n    "Dead": false,\n    "ExitCode": 139,\n'
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "crash_signal")


def test_a_size_next_to_two_to_the_64_named_beside_a_driver_oom_is_absurd() -> None:
    text = (
        "cuMemCreate(&handle, n_bytes_to_allocate, &prop, 0) failed with error "
        "CUDA_ERROR_OUT_OF_MEMORY\n"
        "Logging shows n_bytes_to_allocate is 18446744073700000000.\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "absurd_request")


@pytest.mark.parametrize(
    "text",
    [
        "The pod should be OOM-killed at its limit but it keeps running.\n",
        "The process will be killed if it exceeds the limit.\n",
        "/dev/shm may be too small for training with many workers.\n",
    ],
)
def test_what_should_or_might_happen_is_no_kill_and_no_full_shm(text: str) -> None:
    assert classify(text).cls not in ("host_oom_killed", "shm_exhausted", "killed_unknown")


def test_the_cards_memory_blown_beside_a_kill_is_no_host_kill() -> None:
    assert classify("Killed\n\u663e\u5b58\u7206\u4e86\n").cls != "host_oom_killed"


def test_a_size_short_of_two_to_the_64_is_no_absurd_request() -> None:
    text = "cuMemCreate failed with error CUDA_ERROR_OUT_OF_MEMORY\nthe size is 1844674407 bytes\n"
    assert classify(text).cls == "cuda_oom"
