"""The families of the fifty-eighth part (training and batch jobs on Kubernetes GPU clusters
through operators and workflow systems): each is read in its own words, and a lookalike
beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


def test_a_pod_refused_at_admission_for_memory_is_no_oom() -> None:
    text = (
        "NAME                       READY   STATUS        RESTARTS   AGE\n"
        "worker-776b774978-cdb4b    0/1     OutOfmemory   0          1s\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "admission_refused")


@pytest.mark.parametrize(
    "text",
    [
        "All three trials: the agent was SIGKILLed (exit 137) by the kernel OOM killer under "
        "the 2048MB cap.\n",
        "Node memory went to 4MB, with the kernel OOM-killing MainThread every 20s.\n",
        "Sometimes a pod that goes OOM makes the whole workflow hang.\n",
    ],
)
def test_a_host_kill_told_by_what_killed_it_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_a_pod_that_goes_oom_on_the_gpu_is_no_host_kill() -> None:
    text = "A pod that goes OOM on the GPU makes the workflow hang.\n"
    assert classify(text).cls != "host_oom_killed"


def test_i_still_get_cuda_oom_is_the_cards_memory() -> None:
    text = "Four A10G cards, 24GB each, and I still get CUDA OOM shortly into training.\n"
    assert classify(text).cls == "cuda_oom"
