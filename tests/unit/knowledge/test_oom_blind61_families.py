"""The families of the sixty-first and sixty-second parts (GPU memory and kills outside
machine learning; processes killed in small repositories of any language): each is read in
its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


def test_rust_cudas_out_of_memory_is_the_cards() -> None:
    text = (
        "thread 'main' panicked: called `Result::unwrap()` on an `Err` value: "
        "CudaError::OutOfMemory\n"
    )
    assert classify(text).cls == "cuda_oom"


def test_cycles_illegal_address_in_an_allocation_is_the_illegal_access() -> None:
    text = (
        "ILLEGAL_ADDRESS in cuMemAlloc(&device_pointer, size)\n"
        "From the first line it looks like you're running out of device memory.\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "illegal_memory_access")


def test_a_bus_error_after_leaked_semaphores_is_shared_memory() -> None:
    text = (
        "resource_tracker.py:216: UserWarning: resource_tracker: There appear to be 12 "
        "leaked semaphore objects to clean up at shutdown\n"
        "Bus error (core dumped)\n"
    )
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        "Exporting the tiles the process is just killed, no message at all.\n",
        "Packing layers...Killed`.\n",
        "I think I get killed via SIGKILL. I suspect that this is the linker using too much "
        "memory and getting killed by the OOM killed, but I'm not sure.\n",
    ],
)
def test_a_kill_with_only_a_guess_at_its_cause_is_a_kill_of_unknown_cause(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        "The service exits with code 137 after systemctl stop, no errors at all.\n",
        "Exit code 137 in CI: the test harness was sigkilling itself on teardown.\n",
        "Got a SIGKILL at launch. You lack the `com.apple.security.get-task-allow` entitlement.\n",
    ],
)
def test_a_kill_with_a_known_cause_other_than_memory_is_no_oom(text: str) -> None:
    assert classify(text).cls == "not_oom"


def test_137_said_not_to_mean_oom_is_no_host_kill() -> None:
    text = (
        "137 doesn't mean OOM. It means terminated by SIGKILL, which usually happens because "
        "of the OOM killer.\n"
    )
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "The index build is killed when it goes out of ram on the 32 GB node.\n",
        "[BUG] exporter killed because of memory usage\n",
        "All my RAM filled, then the swap, and finally the linker got killed.\n",
        "RAM usage grows until all 32 GB are consumed. The process is then killed.\n",
        "Jobs that exceed the memory usage limit are not told why they are killed\n",
        "This is due to an over usage of the RAM while linking. Any way to fix it?\n",
        "On my 8GB laptop with an integrated GPU the linux oom killer kicks-in and kills "
        "the shell.\n",
        "Killed\nSetting Docker from 2gig ram to 6 gig ram fixed my issue.\n",
        "webpack | Killed\nThe memory limit was 2G. I changed it to 4G and the build did not "
        "fail.\n",
        "exit code 137\nResizing the droplet fixed it.\n",
        "line 88:    88 Killed    npm install\n"
        "I deployed my app to a bigger machine and it works well now.\n",
        "Exception: Child returned 137\nIt seems my container out of memory at 3.9 GB.\n",
        "Killed\nIt looks like your machine ran out of memory; dmesg shows the OOM killer.\n"
        "@maintainer thanks that was it.\n",
    ],
)
def test_a_host_kill_told_by_its_cause_or_its_cure_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "If the linux oom killer kicks-in and kills the shell, add swap.\n",
        "Killed\nSetting the card from 8 GB to 16 GB of VRAM fixed it on the GPU.\n",
        "Killed\nI changed it to 4G and the build still did not pass.\n",
        "Killed\nIt looks like the GPU ran out of memory.\nthanks that was it\n",
        "Is this due to an over usage of the RAM?\n",
    ],
)
def test_guesses_failed_cures_and_the_cards_memory_are_no_host_kill(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"
