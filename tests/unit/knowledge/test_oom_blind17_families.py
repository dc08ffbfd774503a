"""The families of the seventeenth and eighteenth parts: each is read in its own words, and a
lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "Restart Reason: OOMKill (memory exceeded limit, SIGKILL)\n",
        "the trainer container was terminated due to **OOMKill (Exit Code 137)** last night\n",
    ],
)
def test_oomkill_as_a_reported_reason_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_oomkill_as_a_noun_in_a_sentence_is_not_a_reason() -> None:
    text = (
        "worker process 7 exited on signal 9. That is often related to an OOMKill, but there "
        "is no OOMKill event for the pod\n"
    )
    assert classify(text).cls == "killed_unknown"


def test_systemd_unit_ended_by_the_oom_killer_is_a_host_kill() -> None:
    text = "host systemd[1]: inference.service: Failed with result 'oom-kill'.\n"
    triage = classify(text)
    assert (triage.cls, triage.confidence) == ("host_oom_killed", "high")


def test_systemd_unit_failing_with_an_exit_code_is_not_an_oom() -> None:
    text = "host systemd[1]: inference.service: Failed with result 'exit-code'.\n"
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "run.py was interrupted by signal 9: SIGKILL, and dmesg says host out of memory\n",
        "The job dies with SIGKILL. The system logs indicate it was killed due to insufficient "
        "memory.\n",
    ],
)
def test_a_sigkill_whose_log_said_host_memory_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        # a guess, not what a log said
        "The job dies with SIGKILL. The logs say nothing; maybe it was killed due to "
        "insufficient memory\n",
        # the card's memory
        "died with SIGKILL, and the log says GPU out of memory before that\n",
        # no kill beside it
        "the logs said cpu out of memory once last week, unrelated to this crash\n",
    ],
)
def test_a_guess_the_gpu_or_no_kill_is_not_that_family(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


def test_slurms_out_of_memory_told_in_a_sentence_is_a_host_kill() -> None:
    text = "after an hour all the jobs get killed because of a slurm out-of-memory error\n"
    assert classify(text).cls == "host_oom_killed"


def test_a_slurm_job_that_ran_out_of_gpu_memory_is_not_a_host_kill() -> None:
    text = "the slurm OOM was the GPU: CUDA out of memory on the A100\n"
    assert classify(text).cls == "cuda_oom"


def test_ram_maxed_out_and_the_notebook_crashing_is_host_memory() -> None:
    text = "when I train on the T4 GPU the RAM usage is maxed and the notebook crashes\n"
    assert classify(text).cls == "host_oom_killed"


def test_the_cards_ram_maxed_out_is_not_host_memory() -> None:
    text = "the GPU RAM usage is maxed and the notebook crashes\n"
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "Check failed: is false: Insufficient GPU memory error: 20 GB available, 21 GB needed\n",
        "error: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)\n",
    ],
)
def test_gpu_memory_found_short_is_a_gpu_oom(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "0/3 nodes are available: 1 Insufficient GPU Memory in one device.\n",
        "If you see insufficient GPU memory, lower --max-model-len.\n",
    ],
)
def test_a_scheduling_verdict_or_advice_is_not_a_gpu_oom(text: str) -> None:
    assert classify(text).cls != "cuda_oom"


def test_a_guess_between_the_card_and_the_host_beside_a_kill_names_no_cause() -> None:
    text = (
        "subprocess.CalledProcessError: Command '['python3', 'train.py']' died with "
        "<Signals.SIGKILL: 9>.\n\ngpu or ram went out of memory, use a bigger machine\n"
    )
    assert classify(text).cls == "killed_unknown"


def test_the_shells_killed_quoted_after_other_than_is_a_kill() -> None:
    text = 'The fine-tune dies on launch. There are no messages other than "Killed".\n'
    assert classify(text).cls == "killed_unknown"


def test_an_emptydir_over_its_size_limit_is_an_eviction_for_storage() -> None:
    text = (
        "stop.sh wait exited with 137\n"
        '    message: \'Usage of EmptyDir volume "models" exceeds the limit "2Gi". \'\n'
    )
    assert classify(text).cls == "not_oom"


def test_rays_object_store_larger_than_dev_shm_is_shm() -> None:
    text = (
        "ValueError: The configured object store size (8.0 GB) exceeds /dev/shm size (2.1 GB)."
        " Consider increasing its size with --shm-size in Docker.\n"
    )
    assert classify(text).cls == "shm_exhausted"


def test_sigbus_by_number_beside_an_unmounted_shm_is_shm() -> None:
    text = (
        "Error: Download process was signaled to shutdown with signal 7\n\nMount the shm volume.\n"
    )
    assert classify(text).cls == "shm_exhausted"


def test_signal_7_with_no_shared_memory_named_is_not_shm() -> None:
    assert classify("worker was signaled to shutdown with signal 7\n").cls != "shm_exhausted"


def test_a_question_whether_it_was_the_cards_memory_is_not_a_gpu_oom() -> None:
    text = (
        "To adjust the kill threshold, set the environment variable `RAY_memory_usage_threshold`"
        " when starting Ray.\n\n\u8fd9\u4e2a\u95ee\u9898\u662f\u663e\u5b58\u6ea2\u51fa\u5417"
        "\uff1f\n"
    )
    assert classify(text).cls == "host_oom_killed"
