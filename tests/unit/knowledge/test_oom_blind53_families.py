"""The families of the fifty-third part (memory failures in system logs, container runtimes,
Kubernetes events and monitoring): each is read in its own words, and a lookalike beside it
is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


def test_earlyoom_acting_is_a_host_kill() -> None:
    text = (
        "mem avail: 0 MiB (0 %), swap free: 100 MiB (2 %)\n"
        "Out of memory! avail: 0 MiB < min: 400 MiB\n"
        "Killing process 4242 python\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "userspace_oom_killer")


def test_earlyoom_starting_up_is_no_kill() -> None:
    text = (
        "earlyoom 1.7\n"
        "mem total: 7836 MiB, sending SIGTERM when mem <= 10 %, SIGKILL when mem <= 5 %\n"
    )
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "Jan 24 01:46:15 host kernel: pid 41663 (sliod), uid 0, was killed: out of swap space\n",
        "kernel: pid 977 (postgres), jid 0, uid 70, was killed: failed to reclaim memory\n",
    ],
)
def test_freebsds_kernel_kill_is_a_host_kill(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "kernel_oom_killer")


def test_the_kernels_memory_report_with_no_free_swap_is_host_memory() -> None:
    text = "Mar 10 01:33:03 node-6 kernel: Free swap  = 0kB\n"
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "Error: llama runner process has terminated: error loading model: unable to allocate "
        "CUDA2 buffer\n",
        "llama_model_load: failed to allocate ROCm0 buffer\n",
    ],
)
def test_ggmls_device_buffer_refused_is_the_cards_memory(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("cuda_oom", "ggml_device_buffer")


def test_ggmls_cpu_buffer_refused_is_the_hosts() -> None:
    text = "error loading model: unable to allocate CPU buffer\n"
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "The exporter pod restarted twelve times today and the reason is OOM.\n",
        "Because of the integration tests the OOM killer was triggered on the runner host.\n",
    ],
)
def test_a_restart_with_oom_as_its_reason_is_a_host_kill(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "memory_kill_in_prose")


@pytest.mark.parametrize(
    "text",
    [
        "The pod restarted, maybe the reason is OOM?\n",
        "The trainer crashed and the reason was OOM on the GPU.\n",
    ],
)
def test_a_guessed_reason_or_the_cards_memory_is_no_host_kill(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


def test_a_browser_target_crashed_with_sigkill_is_a_kill_of_unknown_cause() -> None:
    text = '{"method":"Target.targetCrashed","params":{"status":"killed","errorCode":9}}\n'
    assert classify(text).cls == "killed_unknown"


def test_a_cuda_out_of_memory_error_told_with_hyphens_is_the_cards_memory() -> None:
    text = "Leftover processes hold the card, and the result is a CUDA out-of-memory error.\n"
    assert classify(text).cls == "cuda_oom"


def test_checking_for_out_of_memory_issues_is_no_oom() -> None:
    text = "GPU A5000: checked with watch for out-of-memory issues, memory was left.\n"
    assert classify(text).cls != "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "With num_workers > 0 the DataLoader fails; this happens when the shared memory in "
        "the Docker container is insufficient.\n",
        "default shared memory too low\nworkaround is to set training.num_workers=2\n",
    ],
)
def test_shared_memory_told_too_small_for_the_loaders_workers_is_shm(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


def test_advice_to_raise_shared_memory_if_it_is_not_enough_is_not_shm() -> None:
    text = (
        "With many DataLoader workers, pass --shm-size in case the shared memory is not large "
        "enough.\n"
    )
    assert classify(text).cls != "shm_exhausted"
