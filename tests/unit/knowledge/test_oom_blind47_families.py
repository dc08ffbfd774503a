"""The families of the forty-seventh part (host kills told in people's sentences in data
pipelines) and the forty-eighth (GPU memory in large-scale training): each is read in its
own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "`flat_map` with large rows causes worker OOM kills on the 1 TB run.\n",
        "On a 4 GiB pod this causes an OOM kill within minutes.\n",
        "k8s keeps killing executor pods with OOM error although the node is idle.\n",
        "I watched htop: the memory was completely (99%+) used during the join so it was killed.\n",
    ],
)
def test_a_host_kill_told_by_its_cause_is_a_host_kill(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "memory_kill_in_prose")


@pytest.mark.parametrize(
    "text",
    [
        "If the batch is too big this could cause an OOM kill.\n",
        "Fixed a bug that caused GPU OOM kills in the trainer.\n",
        "If the memory is completely used then it is killed, so set a limit.\n",
    ],
)
def test_a_condition_or_the_cards_memory_is_no_host_kill(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


def test_duckdbs_bad_allocation_is_a_host_allocation_refused() -> None:
    text = "Out of Memory Error: Failed to allocate block of 262144 bytes (bad allocation)\n"
    assert classify(text).cls == "host_oom_killed"


def test_duckdb_in_memory_with_nowhere_to_spill_is_its_own_cap() -> None:
    text = (
        "Error: Out of Memory Error: could not allocate block of 262144 bytes\n"
        "Database is launched in in-memory mode and no temporary directory is specified.\n"
        "Unused blocks cannot be offloaded to disk.\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "application_memory_cap")


@pytest.mark.parametrize(
    "text",
    [
        "       ---> Collecting...Killed\n",
        "The query runs for a minute, then a ```killed``` message is printed.\n",
    ],
)
def test_the_shells_killed_glued_to_dots_or_quoted_as_a_message_is_a_kill(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


def test_a_word_ending_in_killed_dots_is_not_the_shell() -> None:
    assert classify("Processes were... killed? No, they exited.\n").cls != "killed_unknown"


def test_dev_shm_of_a_default_size_called_too_small_is_shm() -> None:
    text = "Docker has a default `/dev/shm` size of `64MB` which is much too small for loaders.\n"
    assert classify(text).cls == "shm_exhausted"
