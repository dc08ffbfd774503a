"""Host memory failures as monitors, kernels, runtimes, schedulers and platforms report them:
each reads as a host OOM kill.

Synthetic lines in each family's own words."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify

RAY_OLD_MONITOR = """Traceback (most recent call last):
  File "/opt/ray/python/ray/worker.py", line 830, in _process_task
    self.memory_monitor.raise_if_low_memory()
ray.memory_monitor.RayOutOfMemoryError: More than 95% of the memory on node
worker-3 is used (60.1 / 62.8 GB). The top 10 memory consumers are:
"""


TF_CPU_TENSOR = (
    "2024-03-02 10:11:12.000001: W tensorflow/core/framework/op_kernel.cc:1828] OP_REQUIRES "
    "failed at cwise_ops_common.cc:82 : RESOURCE_EXHAUSTED: OOM when allocating tensor with "
    "shape[512,1024,1024] and type float on /job:localhost/replica:0/task:0/device:CPU:0 by "
    "allocator cpu\n"
)


TF_PINNED_HOST = (
    "Resource exhausted: OOM when allocating tensor with shape[8,3,1024,1024] and type float "
    "on /job:worker/replica:0/task:0/device:CPU:0 by allocator gpu_host_bfc\n"
)


NUMPY_IN_TF = (
    "W tensorflow/core/framework/op_kernel.cc:1751] Resource exhausted: MemoryError: Unable "
    "to allocate 2.00 GiB for an array with shape (512, 1024, 1024) and data type float32\n"
)


def test_rays_old_memory_monitor_is_host_memory() -> None:
    """Ray 1.x's RayOutOfMemoryError ('More than 95% of the memory on node') is host memory."""
    triage = classify(RAY_OLD_MONITOR)
    assert (triage.cls, triage.family) == ("host_oom_killed", "ray_memory_monitor")


@pytest.mark.parametrize("text", [TF_CPU_TENSOR, TF_PINNED_HOST, NUMPY_IN_TF])
def test_tensorflow_out_of_memory_on_the_cpu_device_is_host_memory(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "host_oom_killed", triage.family


@pytest.mark.parametrize(
    "text",
    [
        # Ray 2.x's memory monitor
        "Memory on the node (IP: 10.0.0.7, ID: abc) where the task (task ID: def, name=train, "
        "pid=42, memory used=3.10GB) was running was 60.1GB / 63.0GB (0.954), which exceeds the "
        "memory usage threshold of 0.95. Ray killed this worker (ID: 0a1b) because it was the "
        "most recently scheduled task\n",
        # runc refusing to start a container whose init the kernel killed
        'Error: container create failed: time="2024-01-01T00:00:00Z" level=error msg="runc '
        "create failed: unable to start container process: container init was OOM-killed "
        '(memory limit too low?)"\n',
        # TH's CPU allocator (Torch 0.x)
        "RuntimeError: $ Torch: not enough memory: you tried to allocate 64GB. Buy new RAM! at "
        "/pytorch/aten/src/TH/THGeneral.cpp:201\n",
    ],
)
def test_host_memory_in_other_words(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "host_oom_killed", triage.family


def test_a_cgroup_kill_on_a_host_named_gpu_is_host_memory() -> None:
    text = (
        "Nov 05 13:01:57 gpu-node-07 kernel: Memory cgroup out of memory: Kill process 4242 "
        "(python) score 1309 or sacrifice child\n"
    )
    assert classify(text).cls == "host_oom_killed"


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
        "runtime: VirtualAlloc of 299704320 bytes failed with errno=1455\n"
        "fatal error: out of memory\n",
        "alloc_tensor_range: failed to allocate CPU buffer of size 437944320\n"
        "llama_model_load: error loading model: unable to allocate CPU buffer\n",
        "Nov 30 10:16:57 host-7 kernel: Killed process 799153 (python), UID 1000, "
        "total-vm:606096kB, anon-rss:68308kB, file-rss:13648kB, shmem-rss:0kB\n",
        "RuntimeError: unable to mmap 29764 bytes from file </torch_10182_3020184674_63991>: "
        "Cannot allocate memory (12)\n",
    ],
)
def test_host_memory_refused_or_reclaimed_in_other_words(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "host_oom_killed", triage.family


@pytest.mark.parametrize(
    "text",
    [
        "mkl_malloc: failed to allocate memory\n",
        "blender(400,0xa19571a8) malloc: *** mach_vm_map(size=193413120) failed (error code=3)\n",
        "Memory limit of 512 MiB exceeded with 516 MiB used. Consider increasing the memory "
        "limit.\n",
        "TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.\nExited with exit code "
        "143.\n",
        "=>> PBS: job killed: mem 38427376kb exceeded limit 33554432kb\n",
        "Exceeded soft private memory limit with 133.961 MB after servicing 1085 requests total\n",
        "The replica master 0 ran out-of-memory and exited with a non-zero status of 9(SIGKILL)\n",
    ],
)
def test_host_memory_as_schedulers_and_platforms_report_it(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "host_oom_killed", triage.family
