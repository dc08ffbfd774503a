"""An OOM told only in words, placed on the card or the host by what the lines around it
name, at low confidence; the rest of the hundred-and-sixth to hundred-and-eighth parts'
families beside it.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "OOM on 4090, 24gb\nIs there a setting to make it fit on 24gb of vram?\n",
        "I'm getting OOM on my 12GB GPU with batch size 4, any fix?\n",
        "CUDA OOM Error for the 7B model on two A100 40GB\n",
        "Text encoder OOM\nThe model runs on an L40S; the encoder alone fills the VRAM.\n",
    ],
)
def test_an_oom_told_beside_the_card_is_the_cards_at_low_confidence(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family, triage.confidence) == (
        "cuda_oom",
        "gpu_oom_told_in_words",
        "low",
    )
    assert triage.advice[0].startswith("Only words say this was an OOM")


@pytest.mark.parametrize(
    "text",
    [
        "Worker pod restarts by OOM\n",
        "The deployment will restart due to OOM a few times a day.\n",
        "Our laptop build hit OOM when three jobs ran at once.\n",
    ],
)
def test_an_oom_told_beside_the_host_is_the_hosts_at_low_confidence(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family, triage.confidence) == (
        "host_oom_killed",
        "host_oom_told_in_words",
        "low",
    )


@pytest.mark.parametrize(
    "text",
    [
        # Both places named, or neither: still cannot tell.
        "OOM with the 4090 24gb vram and 64gb ram on Windows\n",
        "The nightly job hit OOM again.\n",
        # Not a report: advice, a feature request, a guess, a question, a table's row.
        "Add a setting to avoid OOM on small GPUs.\n",
        "Feature: limit VRAM use to eliminate the possibility of OOM.\n",
        "It looks like the GPU hits OOM when the cache grows.\n",
        "Does it OOM on a 16GB GPU?\n",
        "| OOM | none seen on the GPU nodes | ok |\n",
        # A library's message no family knows is not a person's report.
        "LLVM ERROR: out of memory\nRunning on the GPU backend\n",
    ],
)
def test_what_is_not_a_placed_report_stays_cannot_tell(text: str) -> None:
    assert classify(text).cls == "cannot_tell"


@pytest.mark.parametrize(
    "text",
    [
        "Memory limit of 953M exceeded with 967M used. Consider increasing the memory limit\n",
        "After investigation the app is killed by the system because of OOM.\n",
        "The instance on fly.io ran out of memory during npm install.\n",
        "The container exits with code 137.\nThis issue does not occur if I allocate 8GB of "
        "RAM to the VM.\n",
    ],
)
def test_a_platform_or_operator_telling_the_host_ran_out_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        '"Err": "task: non-zero exit (137): dockerexec: unhealthy container",\n',
        "Sent interrupt. Waiting 5s before force killing\nExit Code: 137\n",
    ],
)
def test_a_kill_by_a_health_check_or_a_scheduler_stop_is_not_memory(text: str) -> None:
    assert classify(text).cls == "not_oom"


def test_a_possible_machine_out_of_ram_is_a_guess() -> None:
    text = "Killed\nIt's possible the machine ran out of RAM, but I wasn't logging it.\n"
    assert classify(text).cls != "host_oom_killed"
