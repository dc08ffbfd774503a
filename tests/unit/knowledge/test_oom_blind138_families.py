"""The families of the hundred-and-thirty-eighth to hundred-and-forty-first parts (ROCm and
Gaudi; Ray and Dask; Linux hosts outside ML; embedding and vector databases): each is read in
its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        'ERROR:  out of memory\nDETAIL:  Failed on request of size 8192 in memory context "X".\n',
        "PG::OutOfMemory: ERROR:  out of memory DETAIL:  Failed on request of size 4096.\n",
    ],
)
def test_postgresqls_refused_allocation_is_the_hosts(text: str) -> None:
    verdict = classify(text)
    assert (verdict.cls, verdict.family) == ("host_oom_killed", "host_allocation_refused")


def test_postgresqls_own_size_cap_is_not_the_hosts() -> None:
    text = "ERROR:  invalid memory alloc request size 1073741824\n"
    assert classify(text).family != "host_allocation_refused"


@pytest.mark.parametrize(
    "text",
    [
        "[Issue]: the export example requires too much RAM\nLoading the model...\nKilled\n",
        "# Not enough RAM when building the index\nThe run only shows Killed at the end.\nKilled\n",
    ],
)
def test_a_kill_under_a_title_naming_the_hosts_memory_is_a_host_kill(text: str) -> None:
    verdict = classify(text)
    assert (verdict.cls, verdict.family) == ("host_oom_killed", "kill_found_to_be_memory")


def test_a_title_naming_too_much_memory_without_saying_whose_is_not_a_host_kill() -> None:
    text = "The example requires too much memory\nKilled\n"
    assert classify(text).family != "kill_found_to_be_memory"


def test_a_shared_memory_allocation_error_under_a_small_dev_shm_is_shm() -> None:
    text = (
        "The container kept Docker's 64 MiB /dev/shm while the database asked for 512MB.\n"
        "Index creation failed with a shared-memory allocation error.\n"
    )
    assert classify(text).cls == "shm_exhausted"


def test_a_shared_memory_allocation_error_alone_is_not_called_dev_shm() -> None:
    text = "Index creation failed with a shared-memory allocation error.\n"
    assert classify(text).cls != "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        "My job was getting killed for exceeding the memory limit of the container.\n",
        "When I convert the set my 16 GB RAM is running full and the process is killed.\n",
        'Every run ends with a "Killed" message.\nBoth results in out-of-memory on 64GB hosts.\n',
    ],
)
def test_a_kill_told_with_the_hosts_memory_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_a_quoted_killed_message_alone_is_a_kill_of_unknown_cause() -> None:
    text = 'Result of every run: "Killed" message, no other information.\n'
    assert classify(text).cls == "killed_unknown"
