"""Families added after the fifth blind part: each reads its wording (synthetic lines in the
families' own words), and a lookalike that must not be read as it."""

from __future__ import annotations

import pytest

from gpubot.domain.oom import classify


def test_a_cgroup_kill_on_a_host_named_gpu_is_host_memory() -> None:
    text = (
        "Nov 05 13:01:57 gpu-node-07 kernel: Memory cgroup out of memory: Kill process 4242 "
        "(python) score 1309 or sacrifice child\n"
    )
    assert classify(text).cls == "host_oom_killed"


def test_a_gpu_out_of_memory_on_a_host_named_gpu_is_still_the_gpus() -> None:
    text = "gpu-node-07 trainer[42]: RuntimeError: CUDA error: out of memory\n"
    assert classify(text).cls == "cuda_oom"


def test_tensorflow_launching_a_gpu_kernel_out_of_memory_is_gpu_memory() -> None:
    text = (
        "Non-OK-status: GpuLaunchKernel(FillPhiloxRandomKernelLaunch<Distribution>, num_blocks, "
        "block_size, 0, d.stream(), gen, data, size, dist) status: Internal: out of memory\n"
    )
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "2024-05-04T18:05:45.011072877-05:00 container oom 29d72966e0beb17d9b0b9fbc (image=x, "
        "name=k8s_trainer)\n",
        "kernel-supervisor: detected potentially oom-killed process:\n42 (running for 9.25s): "
        "/usr/bin/python3 train.py\n",
        "  Warning  EvictionThresholdMet  7m48s (x38 over 2d5h)  kubelet  Attempting to reclaim "
        "memory\n",
        "I0913 15:20:47.884880 104204 helpers.go:826] eviction manager: thresholds - reclaim not "
        "satisfied: threshold [signal=memory.available, quantity=100Mi] observed 12Mi\n",
    ],
)
def test_host_memory_as_docker_the_kubelet_and_supervisors_report_it(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "host_oom_killed", triage.family


@pytest.mark.parametrize(
    "text",
    [
        "2024-05-04T18:05:45Z container die 29d72966e0beb17d9b0b9fbc (exitCode=1)\n",
        "  Warning  EvictionThresholdMet  2m  kubelet  Attempting to reclaim ephemeral-storage\n",
        "eviction manager: thresholds - threshold [signal=nodefs.available, quantity=10%] met\n",
    ],
)
def test_other_container_events_and_disk_evictions_are_not_host_memory(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "(app:1270): Gdk-WARNING **: shmget failed: error 28 (No space left on device)\n",
        'No space left on device\n\nTraceback (most recent call last):\n  File "run.py", line 9,'
        ' in <module>\n    q = mp.Queue(maxsize=8)\n  File "/usr/lib/python3.7/multiprocessing/'
        'context.py", line 67, in Lock\n    return Lock(ctx=self.get_context())\n  File '
        '"/usr/lib/python3.7/multiprocessing/synchronize.py", line 162, in __init__\n',
    ],
)
def test_shared_memory_out_of_space_without_dev_shm_named(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "shm_exhausted", triage.family


def test_a_bare_disk_full_over_a_save_traceback_is_not_shared_memory() -> None:
    text = (
        'No space left on device\n\nTraceback (most recent call last):\n  File "train.py", '
        "line 210, in save\n    torch.save(state, path)\n"
    )
    assert classify(text).cls == "not_oom"
