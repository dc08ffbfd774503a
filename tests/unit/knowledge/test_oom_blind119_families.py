"""The families of the hundred-and-nineteenth to hundred-and-twenty-first parts (HPC batch
schedulers; LLM serving under load; video and image generation): each is read in its own
words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        # Batch systems' own kills.
        "failed execd enforced h_vmem limit because:\njob 4411.1 died through signal KILL (9).\n",
        "PerformanceKill (Exit Code: 50660)\nJob has exceeded maxRSS: 2048000\n",
        "Jobs held by condor (e.g. over the cgroup memory limit) stay in the queue.\n",
        "ValueError: Too large swap space. 8.00 GiB out of the 8.50 GiB total CPU memory is "
        "allocated for the swap space.\n",
        # ... and told.
        "The array jobs are killed due to memory limits after a few seconds.\n",
        "Resubmit the jobs that die due to reaching the LSF imposed memory limit.\n",
        "The merge job has been failing on the cluster using slurm due to out-of-memory errors.\n",
        "It sets mem too low, leading to the job to be killed.\n",
        "I did not allocate enough memory for these jobs to run to completion.\n",
        "With the admin we found out that it was an out-of-memory error.\n",
        "Ray OOM causes the process to be killed\n",
        "I keep getting a CPU OOM error with the new wheel.\n",
        "Loading the edit model starts consuming RAM endlessly, freezing the whole desktop.\n",
        "Loading the model causes system memory to spike and the process to be killed due to "
        "insufficient RAM.\n",
        "The problem is that system RAM (not vram) is running out of memory.\n",
        # A kill, and the maintainer's reading of it.
        "Exit code 137\nYour job is being killed by your cluster because it's out of memory.\n",
    ],
)
def test_a_host_kill_reported_or_told_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_a_shards_oom_behind_an_nccl_timeout_is_the_cards() -> None:
    text = "Under load a shard will OOM, causing a NCCL timeout, and the container goes down.\n"
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Stub process 'm_0' is not healthy\nI solved this by adding ipc=host to compose.\n",
            "shm_exhausted",
        ),
        (
            'error="llama runner process has terminated: signal: terminated"\n',
            "killed_unknown",
        ),
        ("{'type': 'InternalServerException', 'message': 'Worker died.'}\n", "killed_unknown"),
    ],
)
def test_each_family_gives_its_class(text: str, expected: str) -> None:
    assert classify(text).cls == expected


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # A condition in Chinese: "if bf16 were used it would OOM".
        (
            "\u663e\u5361V100\n\u4f7f\u7528bf16\u7684\u8bdd\u4f1aOOM\uff0c"
            "\u6240\u4ee5\u53ea\u80fd\u7528fp16\n",
            "cuda_oom",
        ),
        # A kill that only looks like memory's to the tool that reports it.
        (
            "The runner kills the analyser after 300 s, and to the analyser it looks like it "
            "was killed because of memory limit.\n",
            "host_oom_killed",
        ),
        # An NCCL timeout only feared.
        ("If a shard would OOM, causing a NCCL timeout, the pod restarts.\n", "cuda_oom"),
    ],
)
def test_lookalikes_are_not_read_as_the_family(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected


def test_a_hedge_in_another_sentence_of_the_paragraph_does_not_hide_a_report() -> None:
    """A pasted paragraph is one line: the hedge of its next sentence is not this one's."""
    text = (
        "The admin looked at it and we found out that it was an out-of-memory error. "
        "However, if this is the case, the scheduler may ignore the memory requested.\n"
    )
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        # The hedge in the report's own sentence still holds.
        "If the admin is right, we found out that it was an out-of-memory error.\n",
        # An exit status's stock gloss is not a finding.
        "Exit status 137 implies that the task was killed for using too much memory. "
        "Try running the tasks one at a time.\n",
    ],
)
def test_a_hedge_or_gloss_in_the_reports_own_sentence_still_holds(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


def test_a_question_in_the_next_sentence_does_not_hide_the_cards_oom() -> None:
    text = "At 2048x2048 it just blows my H100's 80GB VRAM. Is there a way out?\n"
    assert classify(text).cls == "cuda_oom"
