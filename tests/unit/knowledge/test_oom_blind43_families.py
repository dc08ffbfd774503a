"""The families of the forty-third part (GPU memory in vision, audio and scientific code) and
the forty-fourth (kills and memory limits as operators write them, in several languages):
each is read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


def test_a_dataloader_worker_killed_by_signal_without_a_space_is_a_kill() -> None:
    text = "RuntimeError: DataLoader worker (pid 812) is killed by signal:killed\n"
    assert classify(text).cls == "killed_unknown"


def test_numpys_message_without_its_exceptions_name_is_host_memory() -> None:
    text = "Error: unable to allocate 1.21 GiB for an array with shape (9000, 9000) and data type\n"
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "host_allocation_refused")


@pytest.mark.parametrize(
    "text",
    [
        "The loader ends up consuming all the RAM on the box (128GB) and then gets killed.\n",
        "After an epoch the job is killed by the system for using too much ram.\n",
        "Ran it twice and the process got killed by the os\nfor using too much RAM.\n",
        "Memory is flat until the merge, then system memory blows up and the worker is killed.\n",
    ],
)
def test_a_process_that_took_all_the_ram_and_was_killed_is_a_host_kill(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "memory_kill_in_prose")


@pytest.mark.parametrize(
    "text",
    [
        "If the loader ends up consuming all the RAM it gets killed, so stream the files.\n",
        "It was using all the GPU memory and the kernel got killed.\n",
        "for using too much RAM the admins may ban you\n",
    ],
)
def test_a_condition_the_cards_memory_or_no_kill_is_no_host_kill(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


def test_the_oom_killer_named_in_japanese_is_a_host_kill() -> None:
    text = "コンテナがOOM Killerで強制終了 (exit code 137)\n"
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "memory_kill_in_prose")


def test_a_kill_that_a_bigger_reservation_let_succeed_is_a_host_kill() -> None:
    text = (
        "The job was killed with SIGKILL under an 8G reservation.\n"
        "I managed to get the job to succeed with 48G memory reservation.\n"
    )
    assert classify(text).cls == "host_oom_killed"


def test_chromes_out_of_memory_beside_dev_shm_is_shm() -> None:
    text = (
        "[7:7:0131/235140.910186:FATAL:memory.cc(22)] Out of memory. size=262144\n"
        "Docker gives /dev/shm 64mb by default; run with --shm-size=1g.\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("shm_exhausted", "chrome_dev_shm")


def test_chromes_out_of_memory_alone_is_not_shm() -> None:
    text = "[7:7:0131/235140.910186:FATAL:memory.cc(22)] Out of memory. size=262144\n"
    assert classify(text).cls != "shm_exhausted"


def test_a_bus_error_at_share_memory_is_shm() -> None:
    text = (
        "Initializing global model...\n"
        "Bus error (core dumped)\n"
        "It crashed when calling the share_memory method inside the container.\n"
    )
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        "Exit code 137. Thought that maybe the root cause is that it's getting OOMKilled.\n",
        "The task used 900% of its memory. Task should be OOMkilled, but it runs on.\n",
    ],
)
def test_a_guess_or_a_wish_is_not_the_kubelets_reason(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


def test_the_kubelets_reason_is_still_a_host_kill() -> None:
    text = (
        "    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n"
    )
    assert classify(text).cls == "host_oom_killed"


def test_earlyooms_start_up_line_is_no_kill() -> None:
    text = (
        "earlyoom[1460]: sending SIGTERM when mem <=  4.00% and swap <= 10.00%,\n"
        "earlyoom[1460]:         SIGKILL when mem <=  2.00% and swap <=  5.00%\n"
    )
    assert classify(text).cls != "killed_unknown"


def test_a_liveness_probes_restart_told_in_prose_is_the_kubelets_kill() -> None:
    text = (
        "Our liveness probe works as designed and after a restart of the container the "
        "status shows exit code 137.\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "liveness_probe_kill")


def test_advice_to_add_a_liveness_probe_is_not_its_kill() -> None:
    text = "Killed\nYou could add a liveness probe to restart it when it hangs.\n"
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 400.00 GiB. GPU 0 has a "
        "total capacity of 79.25 GiB of which 45.61 GiB is free.\n",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 300.00 GiB.\n",
    ],
)
def test_a_request_larger_than_any_gpu_is_absurd_whatever_the_card(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "absurd_request")


def test_a_large_request_a_big_card_could_hold_is_still_gpu_memory() -> None:
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 200.00 GiB. GPU 0 has a "
        "total capacity of 79.25 GiB of which 45.61 GiB is free.\n"
    )
    assert classify(text).cls == "cuda_oom"
