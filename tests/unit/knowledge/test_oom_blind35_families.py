"""The families of the thirty-fifth part (ML and GPU stacks outside Python) and the
thirty-sixth (databases, search and vector stores): each is read in its own words, and a
lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


def test_heavydbs_gpu_buffer_manager_is_gpu_memory() -> None:
    text = (
        "BufferMgr.cpp:410 ALLOCATION failed to find 512000000B throwing out of memory GPU_MGR:1\n"
    )
    assert classify(text).cls == "cuda_oom"


def test_its_cpu_buffer_manager_is_not_gpu_memory() -> None:
    text = (
        "BufferMgr.cpp:410 ALLOCATION failed to find 512000000B throwing out of memory CPU_MGR:0\n"
    )
    assert classify(text).cls != "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "The search pod OOMKills (exit 137) on the first query after start-up.\n",
        "[Bug]: load failed with an error, yet the queryNode is still oomkilled\n",
    ],
)
def test_an_oomkill_reported_in_a_sentence_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_a_hypothetical_oomkill_is_not_a_host_kill() -> None:
    assert classify("a pod that uses too much memory is OOMKilled: false\n").cls != (
        "host_oom_killed"
    )


def test_an_allocation_of_a_hundred_petabytes_is_absurd() -> None:
    text = (
        "ExecutionDispatch.cpp:159] Failed to allocate 15235361355721605120 bytes of memory\n"
        "MapDHandler.cpp:4929] Exception: Not enough host memory to execute the query\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "absurd_request")
