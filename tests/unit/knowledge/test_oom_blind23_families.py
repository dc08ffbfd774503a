"""The families of the twenty-third part (managed ML platforms and clouds) and the
twenty-fourth (2025 and 2026 threads from the newest stacks): each is read in its own words,
and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "> runtime error\n> Memory limit exceeded (16Gi)\n",
        "Runtime error\nCPU Memory limit exceeded (32GB)\n",
        "heroku[web.1]: Error R15 (Memory quota vastly exceeded)\n",
        "torchserve: RuntimeError: 507 - System out of memory\n",
        "Actors died: CPU Out of Memory when generating sequences\n",
        "an 'OutOfMemory' issue, resulting in the process being killed by SIGKILL (signal 9)\n",
    ],
)
def test_a_platforms_or_a_reporters_host_memory_kill_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        # a quota named in a sentence, not the platform's own line
        "the space has a memory limit exceeded (16Gi) banner in the docs, our run exited 1\n",
        # the card's memory, or a guess
        "an OOM on the GPU, and the launcher then SIGKILLed the other ranks\n",
        "[ERROR] Worker (pid:9) was sent SIGKILL! Perhaps out of memory?\n",
        # host memory named, but no death it explains
        "the logs said cpu out of memory once last week, unrelated to this crash\n",
    ],
)
def test_their_lookalikes_are_not_host_kills(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


def test_ram_past_its_size_beside_the_kill_is_a_host_kill() -> None:
    text = (
        "Process finished with exit code 137 (interrupted by signal 9: SIGKILL)\n\n"
        "the RAM kept growing and the run stopped when memory was over 100%\n"
    )
    assert classify(text).cls == "host_oom_killed"


def test_a_gpu_at_100_percent_beside_a_kill_is_not_a_host_kill() -> None:
    text = "Killed\nGPU memory was at 100% the whole time\n"
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm. Used 9.1G of"
        " 7.5G hbm. Exceeded hbm capacity by 1.6G.\n",
        # a logger that wraps the PyTorch message in the middle
        "key message is Tried to allocate 13.20 GiB. GPU 0\n"
        "             has a total capacity of 44.68 GiB of which 5.15 GiB is free.\n",
    ],
)
def test_accelerator_memory_in_these_wordings_is_a_gpu_oom(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


def test_colabs_session_crashed_for_an_unknown_reason_is_a_death_of_unknown_cause() -> None:
    assert classify("Your session crashed for an unknown reason.\n").cls == "killed_unknown"


def test_colabs_crash_after_using_all_ram_is_still_a_host_kill() -> None:
    text = "Your session crashed after using all available RAM.\n"
    assert classify(text).cls == "host_oom_killed"


def test_a_too_small_shm_size_that_killed_the_data_loader_is_shm() -> None:
    text = (
        "the docker shm size is not propagated to the child runs, so they get 2Gb and go out of"
        " memory (dataloader killed error)\n"
    )
    assert classify(text).cls == "shm_exhausted"


def test_advice_about_shm_size_is_not_shm() -> None:
    text = "if the shm size is too small the dataloader gets killed; raise it\n"
    assert classify(text).cls != "shm_exhausted"


def test_training_that_stops_with_a_quoted_killed_is_a_kill() -> None:
    text = 'the training process stops with a "Killed" message in Docker\n'
    assert classify(text).cls == "killed_unknown"
