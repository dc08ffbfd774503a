"""The families of the thirty-ninth part (platforms' kills: the kernel, systemd, container
runtimes, serverless and PaaS) and the fortieth (GPU memory in research and application
code): each is read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify

OOMD = "Dec 02 10:00:01 host systemd-oomd[812]: "


@pytest.mark.parametrize(
    "text",
    [
        "oomd makes odd choices: despite nix-daemon using the memory, `systemd-resolved` was "
        "killed instead.\n",
        "earlyoom has killed firefox twice today while the build ran.\n",
    ],
)
def test_a_userspace_killer_said_to_have_killed_is_a_host_kill(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "userspace_oom_killer")


@pytest.mark.parametrize(
    "text",
    [
        f"{OOMD}Considered 12 cgroups for killing, top candidates were:\n"
        "systemd-oomd: Failed to kill any cgroups based on swap: Invalid argument\n",
        "Was it oomd that killed the session?\n",
        "systemd-oomd did not kill anything, the unit exited by itself.\n",
    ],
)
def test_its_candidates_a_denial_or_a_question_is_not_a_kill(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


def test_cloud_functions_memory_limit_kill_is_host_memory() -> None:
    assert classify("Function killed. Error: memory limit exceeded\n").cls == "host_oom_killed"


def test_a_kill_that_succeeds_with_more_memory_is_a_host_kill() -> None:
    text = (
        '"errorMessage": "RequestId: 1 Error: Runtime exited with error: signal: killed"\n'
        "After increasing the memory the job succeeds.\n"
    )
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "The last attempt failed with `Proc: Killed`. Maybe it ran out of memory?\n",
        'The "killed" issue could be due to running out of RAM or another program.\n',
        "Training stopped; You're most likely running out of system memory.\nKilled\n",
    ],
)
def test_a_kill_with_only_a_guess_at_memory_is_of_unknown_cause(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-02T10:00:00Z Task timed out after 30.03 seconds\n"
        "RequestId: 1 Error: Runtime exited with error: signal: killed\n",
        "heroku[web.1]: Error R10 (Boot timeout) -> Web process failed to bind to $PORT\n"
        "heroku[web.1]: Stopping process with SIGKILL\n"
        "heroku[web.1]: Process exited with status 137\n",
    ],
)
def test_a_platforms_time_limit_then_its_sigkill_is_not_memory(text: str) -> None:
    assert classify(text).cls == "not_oom"


def test_a_workers_sigfpe_is_a_crash_not_memory() -> None:
    text = "worker exited with exit code 136\nthere are no OOM logs at all\n"
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "crash_signal")


def test_a_bus_error_caught_inside_nccl_is_shared_memory() -> None:
    text = (
        "[host:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)\n"
        "==== backtrace (tid:   3095) ====\n"
        " 0 0x0000000000043090 killpg()  ???:0\n"
        " 1 0x000000000007587d ncclGroupEnd()  ???:0\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("shm_exhausted", "nccl_bus_error")


def test_a_bus_error_caught_elsewhere_is_not_read_as_nccls() -> None:
    text = (
        "Caught signal 7 (Bus error: nonexistent physical address)\n"
        " 0 0x0000000000043090 memcpy()  ???:0\n"
    )
    assert classify(text).family != "nccl_bus_error"


def test_a_bus_error_beside_a_full_root_filesystem_is_the_disk() -> None:
    text = (
        'Console output shows "Bus error". Is the shared memory full?\n'
        "Filesystem   Size  Used Avail Use% Mounted on\n"
        "overlay      58G   58G     0 100% /\n"
        "shm          64M     0   64M   0% /dev/shm\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "bus_error_disk_full")


def test_a_bus_error_beside_huge_pages_is_not_shared_memory() -> None:
    text = (
        "I thought it was shared memory, so I mounted a bigger /dev/shm; it did not help.\n"
        "Bus error (core dumped)\n"
        "The node had huge pages enabled, which the container could not use.\n"
    )
    assert classify(text).cls == "not_oom"


@pytest.mark.parametrize(
    "text",
    [
        'There is a log in `dmesg` stating that the reason is "out of memory".\n'
        "The training process gets killed by the kernel.\n",
        "after many epochs, getting oom kills even with 20GB RAM\n",
        "Memory on the node (IP: 10.0.0.5, ID: 3f2a) where the task (task ID: 9c1, name=head, "
        "pid=4503, memory used\n",
    ],
)
def test_a_host_kill_in_these_words(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "Set the limit higher to avoid oom kills.\n",
        "Are we getting OOM kills here?\n",
    ],
)
def test_advice_or_a_question_about_oom_kills_is_not_one(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


def test_an_illegal_address_beside_an_oom_told_in_passing_is_the_illegal_address() -> None:
    text = (
        "the op's test skipped sizes over 1024 because of cuda out of memory; training fails "
        "with: an illegal cuda memory access was encountered\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "illegal_memory_access")


def _xpu(wanted: str, total: str, free: str = "") -> str:
    of_which = f" of which {free} is free" if free else ""
    return (
        f"torch.OutOfMemoryError: XPU out of memory. Tried to allocate {wanted}. GPU 0 has a "
        f"total capacity of {total}{of_which}. Of the allocated memory 0 bytes is allocated by "
        "PyTorch, and 0 bytes is reserved by PyTorch but unallocated.\n"
    )


@pytest.mark.parametrize(
    ("wanted", "total", "free"),
    [("8.00 GiB", "15.11 GiB", ""), ("4.00 GiB", "15.11 GiB", "15.11 GiB")],
)
def test_an_xpu_request_over_its_one_allocation_cap_is_not_exhaustion(
    wanted: str, total: str, free: str
) -> None:
    triage = classify(_xpu(wanted, total, free))
    assert (triage.cls, triage.family) == ("not_oom", "xpu_allocation_size_cap")


@pytest.mark.parametrize(
    ("wanted", "total", "free"),
    [
        ("2.00 GiB", "15.11 GiB", "1.00 GiB"),  # under the cap: exhaustion
        ("6.00 GiB", "15.11 GiB", "3.00 GiB"),  # less free than asked
        ("16.00 GiB", "16.48 GiB", "16.07 GiB"),  # nearly the whole card
    ],
)
def test_other_xpu_requests_stay_gpu_memory(wanted: str, total: str, free: str) -> None:
    assert classify(_xpu(wanted, total, free)).cls == "cuda_oom"
