"""The families of the forty-first part (host kills on Kubernetes, batch systems and notebook
services) and the forty-second (GPU memory in LLM tooling): each is read in its own words,
and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "Our batch script filled up /dev/shm and the workers hung.\n",
        "The cache grows until /dev/shm (64 MiB by default) is exhausted.\n",
        "The nightly job failed again with /dev/shm issues on node 12.\n",
        "Shared arrays exhausted /dev/shm after an hour.\n",
    ],
)
def test_dev_shm_said_to_be_full_is_shm(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("shm_exhausted", "shm_full_in_prose")


@pytest.mark.parametrize(
    "text",
    [
        "Mount a memory-backed emptyDir so the cache never fills up /dev/shm.\n",
        "If /dev/shm is full the loader may hang.\n",
        "We set --shm-size to avoid exhausting /dev/shm.\n",
    ],
)
def test_advice_or_a_condition_about_dev_shm_is_not_shm(text: str) -> None:
    assert classify(text).cls != "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        "[launch.py:316:sigkill_handler] exits with return code = -7\n"
        "Fixed by raising shm_size in docker-compose.\n",
        "[ERROR] [launch.py:321:sigkill_handler] exits with return -7\n"
        "the container's shared memory was too small\n",
        "训练退出 return code=-7\n是docker\u5171\u4eab\u5185\u5b58开小了\n",
    ],
)
def test_a_launchers_sigbus_beside_shared_memory_is_shm(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        "[launch.py:316:sigkill_handler] exits with return code = -70\nshm_size: 16g\n",
        "[launch.py:316:sigkill_handler] exits with return code = -7\nthe disk was full\n",
    ],
)
def test_another_code_or_no_shared_memory_is_not_shm(text: str) -> None:
    assert classify(text).cls != "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        "AssertionError: Not enough memory for KV cache, try reducing --num-pages\n",
        "Not enough memory for 12 blocks of KV cache.\n",
    ],
)
def test_an_engines_kv_cache_that_does_not_fit_is_gpu_memory(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("cuda_oom", "inference_kv_cache")


def test_a_run_that_ooms_for_want_of_a_block_is_gpu_memory() -> None:
    text = (
        "The 8-GPU run OOMs at step 40 in optimizer.step because the caching allocator "
        "can't find a contiguous block.\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("cuda_oom", "gpu_oom_in_prose")


def test_a_run_that_may_oom_is_not_gpu_memory() -> None:
    text = "A run may OOM if the caching allocator cannot find a contiguous block.\n"
    assert classify(text).cls != "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "Training keeps getting killed (maybe due to CUDA out of memory).\n",
        "The job keeps getting killed, probably CUDA out of memory?\n",
    ],
)
def test_a_guess_at_cuda_oom_beside_a_kill_is_a_kill_of_unknown_cause(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


def test_the_message_itself_is_still_gpu_memory() -> None:
    text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "The converter gets killed by the OS halfway through.\n",
        "Loading the shards causes my program killed.\n",
        "The cell is getting killed and shows a kill command `^C` in the output.\n",
        'The notebook stops on its own and gives a "^C" at the last line.\n',
    ],
)
def test_a_kill_told_in_a_sentence_is_a_kill(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        "Killed\nIt converted fine after I had to allocate 40Gb of swap to make it work.\n",
        "Killed\nI solved it by using a 64GB RAM machine.\n",
        "Killed\n已解决\uff0c增加内存后已正常\u3002\n",
        "The cell is getting killed.\n"
        "This notebook does not work on the free tier due to insufficient memory.\n",
    ],
)
def test_a_kill_that_memory_cured_or_explains_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "Killed\nIt does not work due to insufficient GPU memory on the T4.\n",
        "Killed\nMaybe it does not run due to insufficient memory, not sure.\n",
        "Killed\nI solved it by using a 64GB VRAM card.\n",
    ],
)
def test_the_cards_memory_or_a_guess_is_no_cure(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "The kernel OOM-killed 4 worker processes between 08:31 and 08:40.\n",
        "The exporter was in a crash-loop due to an OOM kill.\n",
        "After an hour we run out of system RAM and the OS kills the process.\n",
        "OOM of CPU memory\nLoading the annotations causes my program killed.\n",
    ],
)
def test_a_host_kill_told_in_a_sentence_is_a_host_kill(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "memory_kill_in_prose")


@pytest.mark.parametrize(
    "text",
    [
        "It takes the node down instead of being OOM-killed.\n",
        "Was the pod restarted due to an OOM kill?\n",
        "If we run out of system RAM and the OS kills the process, the job is lost.\n",
        "OOM of CPU memory: how much does the loader need?\n",
    ],
)
def test_a_wish_a_question_or_a_condition_is_no_host_kill(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


def test_galaxy_rerunning_a_job_condor_held_is_a_memory_limit() -> None:
    text = (
        "06/09/2023-18:15:02, rerunning held job, id 1, description bwa, "
        "memory_provisioned 4096, request_memory 12288, worker-7\n"
    )
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "ERROR: Job 3 failed with return code list: [137, 1, 137]\n",
        "One worker failed with return code 2; SkyPilot cleaned up the processes on other "
        "nodes with return code 137.\n",
    ],
)
def test_a_cleanup_after_a_workers_own_failure_is_not_a_kill(text: str) -> None:
    assert classify(text).cls == "not_oom"


def test_a_list_of_137s_alone_is_no_cleanup() -> None:
    text = "ERROR: Job 3 failed with return code list: [137, 137]\n"
    assert classify(text).family != "launcher_child_exit"


def test_torchruns_teardown_is_no_stop_someone_asked_for() -> None:
    """The agent's SIGTERM to the other workers follows one worker's failure: not a
    confident "asked to stop", which would send the reader away from that failure."""
    text = (
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4100 closing "
        "signal SIGTERM\n"
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4101 closing "
        "signal SIGTERM\n"
    )
    triage = classify(text)
    assert triage.family != "terminated_on_request"
    assert triage.confidence == "low"


def test_a_sigterm_received_is_still_a_requested_stop() -> None:
    triage = classify("Received SIGTERM, shutting down the server\n")
    assert (triage.cls, triage.family) == ("not_oom", "terminated_on_request")
