"""The families of the forty-ninth part (inference and fine-tuning tools, ML operators) and
the fiftieth (data engineering, classic ML, batch pipelines, RL): each is read in its own
words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "The export grew to 40GB and was then terminated by the OOM killer.\n",
        "the worker keeps being terminated by the kernel OOM killer\n",
        "Loading the shards kills the container on OOM every time.\n",
        "The notebook kernel is restarted when it reaches the memory limit of the pod.\n",
    ],
)
def test_a_host_kill_told_in_a_sentence_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "exited with code 137\nIt is likely that the Linux OOM killer killed it.\n",
        "The kernel is restarted when it reaches the GPU memory limit.\n",
        "If the process is terminated by the OOM killer, raise the limit.\n",
    ],
)
def test_a_likely_cause_a_condition_or_the_cards_memory_is_no_host_kill(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "ERROR Job killed by HTCondor due to excessive memory use (RSS=4100 MB).\n",
        "Job has exceeded maxPSS: 8000 MB\nJob has PSS: 8122 MB\n",
    ],
)
def test_a_batch_systems_memory_kill_is_a_host_kill(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "batch_scheduler_memory_kill")


@pytest.mark.parametrize(
    "text",
    [
        "Windows successfully diagnosed a low virtual memory condition. The following "
        "programs consumed the most virtual memory: python.exe (4242) consumed 90000000000 "
        "bytes.\n",
        "Application popup: Windows - Out of Virtual Memory : Your system is low on virtual "
        "memory.\n",
        "!!! Exception during processing !!! El archivo de paginaci\u00f3n es demasiado "
        "peque\u00f1o para completar la operaci\u00f3n. (os error 1455)\n",
        "kernel: memorystatus: jetsam vm-compressor-space-shortage, killing largest process\n",
    ],
)
def test_windows_commit_limit_and_macos_jetsam_are_the_hosts_memory(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "Killed\nI doubled the memory and the indexing proceeds nicely.\n",
        "WorkerLostError: signal 9 (SIGKILL)\nI needed to increase the resources to 2GB.\n",
        "The app was forcibly terminated by the OS.\nincreasing the swap space, solved my "
        "problem\n",
    ],
)
def test_a_kill_cured_by_more_memory_is_a_host_kill(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "kill_cured_by_more_memory")


@pytest.mark.parametrize(
    "text",
    [
        "Killed\nI doubled the GPU memory and the indexing proceeds nicely.\n",
        "Killed\nI doubled the memory but the indexing still never proceeds.\n",
    ],
)
def test_a_cure_of_the_cards_memory_or_one_that_failed_is_none(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        'The run stops after a while. There are no further messages after "Killed".\n',
        "[M::main] loaded the index\nKilled`,so what can I do?\n",
        "The app was forcibly terminated by the OS.\n",
    ],
)
def test_a_kill_quoted_or_told_with_no_cause_is_killed_unknown(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


def test_a_stop_named_beside_the_oom_killer_as_one_suspect_is_no_stop() -> None:
    text = (
        "The task ended with exit code 137.\n"
        "The two candidates are the OOM killer and a docker stop from the harness.\n"
    )
    assert classify(text).cls == "killed_unknown"


def test_a_docker_stop_alone_is_still_a_stop() -> None:
    text = "The task ended with exit code 137 after docker stop was run by the harness.\n"
    assert (classify(text).cls, classify(text).family) == ("not_oom", "stop_requested")


def test_a_startup_probe_kill_is_no_oom() -> None:
    text = "Warning  Unhealthy  kubelet  Startup probe failed: HTTP probe failed with 503\n"
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "liveness_probe_kill")


def test_xgboosts_caching_allocator_is_the_cards_memory_with_its_request() -> None:
    text = (
        "XGBoostError: device_helpers.cuh:428: Memory allocation error on worker 0: "
        "Caching allocator\n"
        "- Free memory: 100663296\n"
        "- Requested memory: 536870912\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("cuda_oom", "xgboost_caching_allocator")
    assert triage.numbers["requested_bytes"] == 536870912


def test_ascends_failed_device_allocation_is_the_accelerators_memory() -> None:
    text = "E39999: alloc device memory failed, runtime result = 207001[FUNC:ReportCallError]\n"
    assert classify(text).cls == "cuda_oom"


def test_ascends_other_runtime_results_are_not_its_memory() -> None:
    text = "E39999: alloc device memory failed, runtime result = 507899[FUNC:ReportCallError]\n"
    assert classify(text).cls != "cuda_oom"


def test_an_allocators_figures_one_to_a_line_decide_fragmentation() -> None:
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB.\n"
        "GPU has 23.50 GiB total, 300.00 MiB free.\n"
        "PyTorch allocated: 21.00 GiB\n"
        "Reserved but unallocated: 1.20 GiB\n"
    )
    assert classify(text).cls == "cuda_oom_fragmentation"


def test_the_same_figures_with_a_small_idle_reserve_are_a_plain_oom() -> None:
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB.\n"
        "GPU has 23.50 GiB total, 300.00 MiB free.\n"
        "PyTorch allocated: 21.00 GiB\n"
        "Reserved but unallocated: 20.00 MiB\n"
    )
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "NCCL error: unhandled system error\nThe pod only allows 64MB of shared memory by "
        "default, so we mounted an emptyDir at /dev/shm.\n",
        "BUG: NCCL error\n\u6211\u7684Pod\u9ed8\u8ba4\u53ea\u5141\u8bb8\u6700\u591a\u4f7f\u7528"
        "64MB\u5171\u4eab\u5185\u5b58\uff0c\u52a0\u4e86--shm-size\u5c31\u597d\u4e86\n",
    ],
)
def test_a_containers_few_megabytes_of_shared_memory_beside_what_it_broke_is_shm(
    text: str,
) -> None:
    assert classify(text).cls == "shm_exhausted"


def test_a_few_megabytes_of_shared_memory_with_nothing_it_broke_is_not_shm() -> None:
    text = "The pod only allows 64MB of shared memory by default.\n"
    assert classify(text).cls != "shm_exhausted"


def test_a_cuda_call_failing_with_error_700_is_an_illegal_address() -> None:
    text = "[Error] PhysX error: SynchronizeStreams cuEventRecord failed with error 700\n"
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "illegal_memory_access")
