"""The families of the ninety-first to ninety-fourth parts (host kills told by their cause,
cluster and platform incidents, data loading, GPU memory outside PyTorch's message): each is
read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "Over the week memory grows and eventually kills the pod.\n",
        "In the middle of the run it killed the worker node because of memory issue.\n",
        "The service regularly crashes because it consumes too much memory at night.\n",
        "The notebook kernel dies because there's not enough RAM for the join.\n",
        "Kernel died on load from out-of-memory condition\n",
        "The cause of the kill was the OOM-Killer, as dmesg showed afterwards.\n",
        "We keep getting workers killed due to Out-of-Memory on the batch nodes.\n",
        "It was caused by running out of memory.\n",
        "Spark on YARN killing executor containers for exceeding memory limits\n",
        "it was killed by the kubelet since it consumed too much memory.\n",
        "OOM with 32G ram and a 7B model\n",
        "Memory Exhaustion and Worker Crash in preprocess() on large inputs\n",
        "my ram goes to 100% within a minute and causes the app to crash\n",
        "The desktop crashes when loading both checkpoints because of RAM filling up.\n",
        "The cached tiles grow past 20 GB, making the machine run out of memory.\n",
        "The swap file was set too low after the disk filled, which was causing my OOM.\n",
        "kernel[0]: low swap: killing largest compressed process with pid 4242 (python3)\n",
    ],
)
def test_host_memory_told_as_the_cause_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        # Found after the kill, by whoever ran it.
        "DataLoader worker (pid 77) is killed by signal: Killed.\nIt turned out the memory on "
        "the free tier is limited.\n",
        "the job gets killed by itself after a while\nYour system does not have sufficient "
        "memory for caching.\n",
        "Killed\nthe process reaches over 30 GB just before it dies.\n",
        "Process completed with exit code 137.\nWe are hitting 7Gi of 7Gi available RAM.\n",
        # A death of a worker or a kernel with the host's memory found.
        "The kernel appears to have died. It will restart automatically.\nTurns out it was "
        "just a memory problem.\n",
        # The runner's cancel, cured by more swap even with the tool's link between.
        "The operation was canceled.\nIncreasing the **swap space** to 8GB with "
        "[set-swap](https://example.invalid/set-swap) fixed the problem.\n",
    ],
)
def test_a_kill_or_death_with_the_hosts_memory_found_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "The operation was canceled.\n",
        "TerminatedWorkerError: A worker process managed by the executor was unexpectedly "
        "terminated. This could be caused by a segmentation fault while calling the function "
        "or by an excessive memory usage causing the Operating System to kill the worker.\n",
    ],
)
def test_a_runner_cancel_or_a_lost_joblib_worker_is_of_unknown_cause(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


def test_a_reporter_finding_shared_memory_short_is_shm() -> None:
    text = "I found it is caused by lack of shared memory.\n"
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        '  File "vllm/worker/worker.py", line 171, in initialize_cache\n'
        "    raise_if_cache_size_invalid(num_gpu_blocks,\n",
        "I hit out-of-memory errors whenever I raise mem_fraction_static above 0.85.\n",
        "On the 24 GB card I get an out-of-memory error.\nThe default KV cache size is too "
        "large for this model.\n",
        "CUDA execution provider BFCArena grabs most of the card, then bfc_arena.cc Failed to "
        "allocate memory for requested buffer of size 4194304\n",
    ],
)
def test_serving_engines_and_onnxruntime_out_of_device_memory_are_the_cards(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # A guess in the sentence is no finding.
        ("Kernel died.\nIt's possible the machine ran out of RAM.\n", "host_oom_killed"),
        (
            "The pods restart and we think they might be killed due to out-of-memory.\n",
            "host_oom_killed",
        ),
        # The card's memory in the sentence is not the host's.
        ("The job crashes because it uses too much GPU memory.\n", "host_oom_killed"),
        # joblib's stock list names a segmentation fault as a possibility, not a crash.
        (
            "TerminatedWorkerError: A worker process managed by the executor was unexpectedly "
            "terminated. This could be caused by a segmentation fault while calling the "
            "function.\n",
            "not_oom",
        ),
        # The KV cache too large with no out-of-memory error is a setting, not an OOM.
        ("The default KV cache size is too large, I think.\n", "cuda_oom"),
    ],
)
def test_lookalikes_are_not_read_as_the_family(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected


def test_a_pod_dying_with_status_code_139_is_a_crash() -> None:
    text = "Right after loading the pod is dying with status code 139.\n"
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "crash_signal")
