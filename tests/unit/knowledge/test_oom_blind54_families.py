"""The families of the fifty-fourth part (mainstream training libraries, 2023-2026): each is
read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


def test_pytorch_1x_figures_cut_inside_reserved_in_total_still_decide_fragmentation() -> None:
    text = (
        "Error: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 0; 79.15 GiB total "
        "capacity; 70.00 GiB already allocated; 40.00 MiB free; 72.00 GiB reserved in tot\n"
    )
    assert classify(text).cls == "cuda_oom_fragmentation"


def test_the_same_cut_figures_with_little_idle_are_a_plain_oom() -> None:
    text = (
        "Error: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total "
        "capacity; 70.00 GiB already allocated; 40.00 MiB free; 70.10 GiB reserved in tot\n"
    )
    assert classify(text).cls == "cuda_oom"


def test_torchs_shm_file_named_in_a_sentence_is_shm() -> None:
    text = "Parsing fails with an exception `unable to write to file /torch_31337_42`.\n"
    assert classify(text).cls == "shm_exhausted"


def test_xlas_hbm_report_is_the_accelerators_memory() -> None:
    text = (
        "Total hbm usage >= 11.47G:\n    reserved        530.00M\n    program          10.96G\n"
        "Program hbm requirement 10.96G:\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("cuda_oom", "xla_resource_exhausted")


@pytest.mark.parametrize(
    "text",
    [
        "The merge step died to the OOM killer three times on a 31 GB box.\n",
        "There is no error message because it's a CPU OOM, the job just crashes.\n",
    ],
)
def test_a_host_kill_told_by_what_killed_it_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_a_cpu_oom_asked_about_is_no_host_kill() -> None:
    text = "Could it be that it's a CPU OOM? Nothing in the log says so.\n"
    assert classify(text).cls != "host_oom_killed"


def test_what_ran_said_to_be_killed_is_a_kill_of_unknown_cause() -> None:
    text = "The dataset.map function is killed or hangs for bigger datasets.\n"
    assert classify(text).cls == "killed_unknown"


def test_a_worker_killed_by_another_signal_is_not_a_sigkill() -> None:
    text = "RuntimeError: DataLoader worker is killed by signal: Segmentation fault.\n"
    assert classify(text).cls != "killed_unknown"
