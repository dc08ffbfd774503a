"""The families of the twenty-second part (the thinnest classes, and hard negatives that carry
memory words): each is read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "ERROR:  out of shared memory\n"
        "HINT:  You might need to increase max_locks_per_transaction.\n",
        "pg_dump: error: query failed: ERROR:  out of shared memory\n",
    ],
)
def test_postgresqls_lock_table_full_is_not_an_oom(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "database_lock_table_full")


def test_a_data_loader_out_of_shared_memory_is_still_shm() -> None:
    text = "RuntimeError: DataLoader worker exited: out of shared memory\n"
    assert classify(text).cls == "shm_exhausted"


def test_heroku_stopping_a_dyno_over_its_memory_quota_is_a_host_kill() -> None:
    text = (
        "heroku[worker.1]: Error R15 (Memory quota vastly exceeded)\n"
        "heroku[worker.1]: Stopping process with SIGKILL\n"
    )
    assert classify(text).cls == "host_oom_killed"


def test_herokus_quota_merely_exceeded_is_not_a_kill() -> None:
    assert classify("heroku[web.1]: Error R14 (Memory quota exceeded)\n").cls != "host_oom_killed"


def test_a_cgroup_limit_crossed_and_the_kill_in_one_sentence_is_a_host_kill() -> None:
    text = "the job's RSS crosses the cgroup limit and the kernel SIGKILLs the pod with exit 137\n"
    assert classify(text).cls == "host_oom_killed"


def test_a_conditional_about_the_cgroup_limit_is_not_a_kill() -> None:
    text = "if usage exceeds the container memory limit the kernel kills it; ours exited 1\n"
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "launching a job fails: there is not enough shared memory\n",
        "/dev/shm volume in the api pod is quickly filling up\n",
        "I had to manually increase the Docker `/dev/shm` to get it to start\n",
    ],
)
def test_shared_memory_short_told_in_words_is_shm(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


def test_advice_to_increase_dev_shm_is_not_evidence() -> None:
    assert classify("you may want to increase /dev/shm for big batches\n").cls != "shm_exhausted"


def test_gunicorn_killing_a_worker_after_its_timeout_is_not_an_oom() -> None:
    text = (
        "[CRITICAL] WORKER TIMEOUT (pid:31)\n"
        "[ERROR] Worker (pid:31) was sent SIGKILL! Perhaps out of memory?\n"
    )
    assert classify(text).cls == "not_oom"


def test_gunicorns_sigkill_alone_is_a_kill_of_unknown_cause() -> None:
    text = "[ERROR] Worker (pid:31) was sent SIGKILL! Perhaps out of memory?\n"
    assert classify(text).cls == "killed_unknown"


def test_gpu_inside_a_hosts_name_does_not_make_its_oom_a_gpus() -> None:
    text = "node `gke-pool-gpu-n1-highmem-8-7lpz` ran out of memory and the job was evicted\n"
    assert classify(text).cls != "cuda_oom"


def test_a_gpu_named_as_a_word_still_ran_out() -> None:
    assert classify("RuntimeError: GPU 0 ran out of memory\n").cls == "cuda_oom"


def test_a_host_memory_shortage_found_later_beside_deepspeeds_minus_nine_is_a_host_kill() -> None:
    text = (
        "[launch.py:320:sigkill_handler] ['python', 'train.py'] exits with return code = -9\n\n"
        # "found later: not enough memory"
        "\u540e\u6765\u53d1\u73b0\u662f\u5185\u5b58\u4e0d\u591f\n"
    )
    assert classify(text).cls == "host_oom_killed"


def test_a_question_why_it_was_killed_beside_a_segfault_is_the_segfault() -> None:
    text = (
        "\u8bf7\u95ee\u4e3a\u4ec0\u4e48\u4f1a\u88abkilled\n"  # "may I ask why it gets killed"
        "RuntimeError: DataLoader worker (pid 7) is killed by signal: Segmentation fault\n"
    )
    assert classify(text).cls == "not_oom"
