"""The families of the hundred-and-first and hundred-and-second parts (GPU memory in multi-GPU
training; host kills of services outside ML told by operators): each is read in its own
words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        # A launcher's report of SIGBUS with nothing about shared memory or a data loader.
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -7) local_rank: 3 "
        "(pid: 777) of binary: /usr/bin/python3\n",
        "  traceback : Signal 7 (SIGBUS) received by PID 777\n",
        # Gradle's daemon gone, its stock guess after it.
        "Gradle build daemon disappeared unexpectedly (it may have been killed or may have "
        "crashed)\n",
    ],
)
def test_a_death_whose_cause_is_not_shown_is_killed_unknown(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


def test_sigbus_beside_a_data_loader_stays_shared_memory() -> None:
    text = (
        "ERROR: Unexpected bus error encountered in worker. This might be caused by "
        "insufficient shared memory (shm).\nfailed (exitcode: -7) local_rank: 0 (pid: 12)\n"
    )
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        "The operator pod restarts with oomkilled termination reason.\n",
        "When this happens, the manager container restarts with OOMKill as the reason.\n",
        "The image build crashes due to OOMKill, but exits 0.\n",
        "OOM-kills happen when the indexer runs inside the limits.\n",
        "During step 20 the host memory usage jumped from 300G to OOM.\n",
        "It was due to a RAM constraint.\nDuring those bursts the database container would "
        "crash.\n",
    ],
)
def test_a_host_kill_told_by_an_operator_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "Training goes well but I get cuda oom when saving the final checkpoint.\n",
        "CUDA OOM due to optimizer state load\n",
        "why GPU OOM with zero3 and offload on four 24g cards\n",
    ],
)
def test_the_cards_oom_told_by_the_reporter_is_a_gpu_oom(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


def test_an_exabyte_request_is_absurd() -> None:
    assert classify("CUDA OOM while saving (trying to allocate 2EB memory)\n").cls == "not_oom"


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # A build running out of memory beside V8's heap limit is the runtime's cap.
        (
            "Running the webpack build always runs out of memory.\nFATAL ERROR: Reached heap "
            "limit Allocation failed - JavaScript heap out of memory\n",
            "host_oom_killed",
        ),
        # A condition before the words is not a report.
        ("If you get CUDA OOM during training, lower the batch size.\n", "cuda_oom"),
        # A title's "GPU OOM" with the host's memory climbing in the body is not the card's.
        (
            "rank 0 GPU OOM while training with DDP\nThe rank 0 process is killed by the system "
            "after several hours; RSS MEM USE: 212.04G\n",
            "cuda_oom",
        ),
        # A RAM constraint with nothing that died beside it is not a kill.
        ("It was due to a RAM constraint that we chose the smaller model.\n", "host_oom_killed"),
    ],
)
def test_lookalikes_are_not_read_as_the_family(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
