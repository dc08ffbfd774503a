"""The fifteenth part's families: RAPIDS' CUDA exception and its device store's failed
allocation, shared memory exhausted or a segment not created said in words, /dev/shm at 100 %
in df, Ray's object store larger than /dev/shm, Windows' paging file too small, a pod or
worker killed because of an OOM said in a sentence, and a hedged list of causes that is no
GPU OOM. Each is read, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "ai.rapids.cudf.CudaException: out of memory\n\tat ai.rapids.cudf.Cuda.freeZero(Native)\n",
        "INFO DeviceMemoryEventHandler: Device allocation of 4096 bytes failed, device store has "
        "100 total and 0 spillable bytes.\n",
    ],
)
def test_rapids_running_out_of_device_memory_is_a_gpu_oom(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


def test_rapids_spilling_without_a_failure_is_not_an_oom() -> None:
    text = "WARN RapidsDeviceMemoryStore: device memory store spilling to reduce usage\n"
    assert classify(text).cls != "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "The training pod was crashing due to exhausting shared memory.\n",
        "We are failing to create a shared memory segment for NCCL.\n",
        "shm              64M   64M     0 100% /dev/shm\n",
        "ValueError: The configured object store size exceeds the capacity of /dev/shm.\n",
    ],
)
def test_shared_memory_run_out_said_or_shown_is_shm(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        "shm              64M   1M     63M   2% /dev/shm\n",
        "overlay          100G  100G   0    100% /\n",
        "The shared memory segment was created and attached.\n",
    ],
)
def test_shared_memory_with_room_or_a_full_disk_is_not_shm(text: str) -> None:
    assert classify(text).cls != "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        "OSError: [WinError 1455] The paging file is too small for this operation to complete. "
        'Error loading "C:\\\\torch\\\\lib\\\\cudnn64_8.dll"\n',
        "OSError: 页面文件太小 无法完成操作\n",
    ],
)
def test_windows_paging_file_too_small_is_host_memory(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "When a pod gets killed by K8S because of OOM, the scheduler logs FAILED.\n",
        "Vague logs when the worker crashes due to out of memory (OOME).\n",
    ],
)
def test_a_pod_or_worker_killed_because_of_an_oom_said_in_a_sentence_is_host_memory(
    text: str,
) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "memory_kill_in_prose")


@pytest.mark.parametrize(
    "text",
    [
        "The worker crashed due to out of memory on the GPU.\n",  # the GPU's
        "The job died; it could be because of OOM or a bad node.\n",  # a guess
    ],
)
def test_the_gpus_oom_or_a_guess_is_not_a_host_kill_in_prose(text: str) -> None:
    assert classify(text).family != "memory_kill_in_prose"


def test_a_hedged_list_of_causes_is_not_a_gpu_oom() -> None:
    text = (
        "pid 6057 (gpu-reconstruction) was killed abnormally with exit code 137, could be out "
        "of memory killer, segfault, unhandled exception, SIGKILL, etc...\n"
    )
    triage = classify(text)
    assert triage.cls == "killed_unknown"
