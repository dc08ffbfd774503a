"""The families of the eighty-first and eighty-second parts (big data and classic ML on large
memory; CI systems, build tools and test runners): each is read in its own words, and a
lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        # Host-only programs said to run out of memory or eat it up.
        "After an hour pandas is running out of memory on the merge.\n",
        "duckdb eats up all my RAM and the laptop freezes.\n",
        "Polars using more than 100% of the memory makes the job crash, but if it runs alone "
        "it can use all cores.\n",
        "Linking the tests, cargo will run out of memory and crash.\n",
        # ... and what the box did about it.
        "The container takes 9 GB of 4 GB, so it got killed by YARN.\n",
        "The workers grow over days and eventually are killed OOM.\n",
        "Memory usage exceeded the allotted 2GB of RAM, causing the kernel to send SIGKILL. Is "
        "there a flag to lower it?\n",
        "The CI server is running out of memory and killing its agents. Can we add RAM?\n",
        "It crashes as it is unable to allocate (12.5) GB of memory.\n",
        # Arrow's exception alone ending the traceback.
        '  File "pyarrow/error.pxi", line 85, in pyarrow.lib.check_status\n'
        "pyarrow.lib.ArrowMemoryError\n",
        # A kill, and beside it memory growing or a cure tried and confirmed.
        "exit code 137\nthe reader consumes more and more memory as rows go by\n",
        "g++: fatal error: Killed signal terminated program cc1plus\nOK, trying a bigger swap "
        "file...\nIt worked!\n",
    ],
)
def test_a_host_kill_told_in_these_words_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "the jupyter kernel dies when fit() starts\n",
        "more than 300 rounds causes the kernel to die after the last round\n",
        "[gw3] node down: Not properly terminated\nreplacing crashed worker gw3\n",
        "The hosted runner: GitHub Actions 7 lost communication with the server. Anything in "
        "your workflow that terminates the runner process can cause this error.\n",
        "The process still gets Killed with 200GB reserved.\n",
        # Chinese: "the build finished, exit code 137".
        "[build] \u751f\u6210\u5df2\u5b8c\u6210\uff0c\u9000\u51fa\u4ee3\u7801\u4e3a 137\n",
        # A guess that a SIGKILL is usually memory is no finding.
        "Killed\nA SIGKILL is almost always the kernel OOM killer terminating the process.\n",
    ],
)
def test_a_kill_in_these_words_is_a_kill_of_unknown_cause(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    ("text", "family"),
    [
        (
            "unable to create new native thread\n\nBlaze ran out of memory and crashed.\n",
            "thread_limit",
        ),
        (
            "Out of Memory Error: could not allocate block of 262144 bytes\n",
            "application_memory_cap",
        ),
        (
            "Out of Memory Error: Failed to change memory limit to 64000000: could not free up "
            "enough memory\n",
            "application_memory_cap",
        ),
        ("ArrowMemoryError: malloc of size 3817947094267967360 failed\n", "absurd_request"),
    ],
)
def test_these_limits_and_sizes_are_not_the_hosts_memory(text: str, family: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", family)


@pytest.mark.parametrize(
    "text",
    [
        "terminate called after throwing an instance of 'thrust::system::system_error'  what():"
        "  /src/common/device_helpers.cuh(451): out of memory\n",
    ],
)
def test_thrusts_system_error_from_a_cuda_helper_is_a_cuda_oom(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "[0218/153124.920942:FATAL:memory.cc(22)] Out of memory. size=262144\nMore memory did "
        "not help; the IPC settings of Docker did.\n",
        "Chrome kept crashing. Had to up the space given to `/dev/shm` by Docker, then it "
        "worked fine.\n",
    ],
)
def test_chromes_shared_memory_told_is_shm(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # The card, a hedge, a question.
        ("XGBoost on the GPU is running out of memory.\n", "host_oom_killed"),
        ("Maybe pandas is running out of memory here?\n", "host_oom_killed"),
        ("Could it be killed by YARN?\n", "host_oom_killed"),
        # DuckDB refused by the host, not its own limit.
        (
            "Out of Memory Error: Failed to allocate block of 262144 bytes (bad allocation)\n",
            "not_oom",
        ),
        # A cure that did not work.
        (
            "Killed\ntrying a bigger swap file now\nit worked until the last step, then died "
            "again, not fixed\n",
            "host_oom_killed",
        ),
        # An Arrow request a machine could hold is refused by the host.
        ("ArrowMemoryError: malloc of size 81604378688 failed\n", "not_oom"),
    ],
)
def test_lookalikes_are_not_read_as_these_families(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
