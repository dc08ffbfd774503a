"""The families of the hundred-and-sixteenth to hundred-and-eighteenth parts (distributed
compute on clusters; the newest reports; services in containers outside ML): each is read in
its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "(worker pid=4411) cannot allocate memory for thread-local data: ABORT\n",
        "Container [pid=9,containerID=c_01] is running beyond virtual memory limits. Current "
        "usage: 200 MB of 1 GB physical memory used; 3.1 GB of 2.1 GB virtual memory used. "
        "Killing container.\n",
        'OUT App instance exited: "exit_description"=>"Exited with status 137 (out of memory)"\n',
        "The ingest service experiences OOMKill on its worker pods under small loads.\n",
        "Executor pods are killed with OOM error after the shuffle.\n",
        "There's plenty of RAM free; the OOM kill is triggered because of the 8G limit.\n",
        "After the upgrade we had a number of OOMKills that left pods in CrashLoopBackOff.\n",
    ],
)
def test_a_host_kill_reported_or_told_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "Exit status: 143. Diagnostics: Container killed on request.\nKilled by external signal\n",
        "When I scale to 200 workers the session on the login node gets killed.\n",
        "Some containers are silently killed once ten of them run.\n",
    ],
)
def test_a_kill_with_no_cause_is_a_kill_of_unknown_cause(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


def test_rusts_allocation_of_two_to_the_64_bytes_is_another_bugs_size() -> None:
    text = "memory allocation of 18446744073709551615 bytes failed\nerror: could not compile\n"
    assert classify(text).cls == "not_oom"


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # A cause asked about, not told.
        ("Containers are killed by the daemon (due to lack of RAM?)\n", "host_oom_killed"),
        # OOMKilled named for the other cases, with memory ruled out for this one.
        (
            "Exit code 137, Reason Error: it was not due to memory issues, since when memory "
            "kills the pod we get the reason 'OOMKilled'.\n",
            "host_oom_killed",
        ),
        # The JVM's commit refused for a permission, not for memory.
        (
            "os::commit_memory(0x00007f, 2555904, 1) failed; error='Operation not permitted' "
            "(errno=1)\n"
            "# There is insufficient memory for the Java Runtime Environment to continue.\n",
            "host_oom_killed",
        ),
    ],
)
def test_lookalikes_are_not_read_as_the_family(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
