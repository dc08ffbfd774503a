"""The families of the hundred-and-thirty-fourth to hundred-and-thirty-seventh parts (Windows
and WSL2; data processing; builds and CI; simulation and rendering), and one of the
hundred-and-twenty-sixth's (a kill told as a condition): each is read in its own words, and a
lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        # A build that took the host's memory.
        "Every time I compile the extension it exhausts the RAM and the desktop freezes.\n",
        "The first try used 120 gb RAM and eventually crashed.\n",
        "We hit OOM of the whole machine during the image build.\n",
        "The CI runner is running out of memory when compiling the Cuda kernels.\n",
        # Killed for want of the host's RAM, told.
        "Large scenes cause runs to be killed when the system doesn't have enough RAM.\n",
        "The memory on the CPU kept getting larger and larger and other programs got killed.\n",
        # numpy's refusal without "with".
        "unable to allocate 12.5 GiB for an array shape (10, 167772160) and data type float64\n",
    ],
)
def test_a_host_memory_failure_told_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_a_guess_that_a_build_ran_out_of_memory_is_not_a_report() -> None:
    text = (
        "c++: fatal error: Killed signal terminated program cc1plus\n"
        "I suspect this is due to the runner running out of memory.\n"
    )
    assert classify(text).cls != "host_oom_killed"


def test_a_cuda_build_out_of_memory_is_not_the_cards() -> None:
    assert classify("Cuda build runs out of memory on the default runner\n").cls != "cuda_oom"


def test_lm_studios_buffer_named_with_its_backends_is_the_cards() -> None:
    text = "error loading model: unable to allocate CUDA0 <and Vulkan0> buffer\n"
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "ERROR zenohc::shm::posix_shm_provider: Unable to create POSIX shm segment: OS error 12\n",
        "ERROR zenohc::shm::posix_shm_provider: Unable to create POSIX shm segment: OS error 12\n"
        "terminate called after throwing an instance of 'std::bad_alloc'\n",
    ],
)
def test_zenohs_shared_memory_segment_refused_is_shm(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    ("text", "family"),
    [
        (
            "Out of Memory Error:\nfailed to offload data block of size 296.0 KiB "
            "(0 bytes/0 bytes used).\n",
            "application_memory_cap",
        ),
        (
            "Error: Resources exhausted: Failed to allocate additional 131072 bytes for "
            "ExternalSorterMerge[0] with 31850496 bytes already allocated for this reservation - "
            "45560 bytes remain available for the total pool\n",
            "application_memory_cap",
        ),
    ],
)
def test_an_engines_own_memory_limit_is_not_an_oom(text: str, family: str) -> None:
    verdict = classify(text)
    assert (verdict.cls, verdict.family) == ("not_oom", family)


def test_a_kill_told_as_a_condition_in_a_feature_request_is_not_a_kill() -> None:
    text = (
        "[Feature request] Exit code on failure\n"
        "For example, if a worker pod is killed (exit code 137), I would like to see that "
        "exit code in the job's status.\n"
    )
    assert classify(text).cls == "not_oom"


def test_a_kill_reported_with_its_exit_code_is_still_a_kill() -> None:
    assert classify("The worker pod crashed (exit code 137).\n").cls == "killed_unknown"
