"""The families of the ninety-fifth and ninety-sixth parts (host kills told in words outside
ML; LLM tooling): each is read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        # Cures told by whoever ran it, beside the kill.
        "search-1 exited with code 137\nGiving docker more memory did the trick, thanks.\n",
        "api exited with code 137\nNow it works, I increased `APP_MEM_LIMIT=4294967296`.\n",
        "error: signal: 9, SIGKILL: kill\nGot it building on a VM with: `32 GB Memory`.\n",
        # The finding beside the kill.
        "Process completed with exit code 137.\nWe currently have some memory issue on the "
        "runners.\n",
    ],
)
def test_a_kill_with_memory_cured_or_found_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "The worker is being killed during export because it is consuming too much CPU memory.\n",
        "The database exited with code 137 under memory pressure after the import.\n",
        "It kept running out of memory; it used ~40GB at the peak.\n",
        "Memory limit of xx MiB exceeded with xx MiB used. Consider increasing the memory limit\n",
    ],
)
def test_host_memory_told_as_the_cause_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_vllm_finding_no_memory_for_its_cache_blocks_is_the_cards() -> None:
    text = "I got the error no available memory for the cache blocks during allocation.\n"
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # "Most likely" in Chinese beside the kill is a guess.
        (
            "\u5408\u5e76\u65f6\u51fa\u73b0 Killed\n\u5927\u6982\u7387\u662f\u5185\u5b58"
            "\u4e0d\u8db3\u3002\n",
            "host_oom_killed",
        ),
        # "almost certainly" is a guess, not a finding.
        (
            "Exit code -9: the process was killed, almost certainly by the OS under memory "
            "pressure.\n",
            "host_oom_killed",
        ),
        # An OOM on the CPU, said instead of the GPU's, is not the card's.
        ("Killed with signal -9. I think it is OOM on cpu instead of gpu.\n", "cuda_oom"),
        # The GPU's memory as the cause is not the host's.
        ("The job crashed because it was using too much GPU memory.\n", "host_oom_killed"),
    ],
)
def test_lookalikes_are_not_read_as_the_family(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
