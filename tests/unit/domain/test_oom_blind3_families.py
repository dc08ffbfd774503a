"""Families added after the third blind part: each reads its wording (synthetic lines in the
families' own words), and a lookalike that must not be read as it."""

from __future__ import annotations

import pytest

from gpubot.domain.oom import classify

TF_CPU_TENSOR = (
    "2024-03-02 10:11:12.000001: W tensorflow/core/framework/op_kernel.cc:1828] OP_REQUIRES "
    "failed at cwise_ops_common.cc:82 : RESOURCE_EXHAUSTED: OOM when allocating tensor with "
    "shape[512,1024,1024] and type float on /job:localhost/replica:0/task:0/device:CPU:0 by "
    "allocator cpu\n"
)
TF_GPU_TENSOR = (
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor "
    "with shape[64,256,56,56] and type float on /job:localhost/replica:0/task:0/device:GPU:0 "
    "by allocator GPU_0_bfc\n"
)
TF_PINNED_HOST = (
    "Resource exhausted: OOM when allocating tensor with shape[8,3,1024,1024] and type float "
    "on /job:worker/replica:0/task:0/device:CPU:0 by allocator gpu_host_bfc\n"
)
NUMPY_IN_TF = (
    "W tensorflow/core/framework/op_kernel.cc:1751] Resource exhausted: MemoryError: Unable "
    "to allocate 2.00 GiB for an array with shape (512, 1024, 1024) and data type float32\n"
)


@pytest.mark.parametrize("text", [TF_CPU_TENSOR, TF_PINNED_HOST, NUMPY_IN_TF])
def test_tensorflow_out_of_memory_on_the_cpu_device_is_host_memory(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "host_oom_killed", triage.family


def test_tensorflow_out_of_memory_on_the_gpu_device_stays_gpu_memory() -> None:
    """The same wording on device:GPU:0 and its BFC allocator is the GPU's memory."""
    triage = classify(TF_GPU_TENSOR)
    assert triage.cls == "cuda_oom"
    assert triage.family == "tf_resource_exhausted"


def test_a_gpu_failure_after_a_cpu_allocator_warning_is_still_the_gpus() -> None:
    """Only the line that names the CPU is excluded: a GPU OOM later in the log decides."""
    triage = classify(TF_CPU_TENSOR + TF_GPU_TENSOR)
    assert triage.cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        # docker ps and docker inspect's status column
        '4f1c2a3b9d0e   trainer:latest   "python train.py"   2 hours ago   Exited (137) 5 '
        "minutes ago   trainer\n",
        # a shell trace of an exit handler
        "+[05:25:15] exit_handler\n+[05:25:15] rc=137\n",
        "worker exited, ret=-9\n",
        # MPICH's Hydra banner: the signal's number
        "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 4242 RUNNING AT "
        "node-3\n=   EXIT CODE: 9\n=   CLEANING UP REMAINING PROCESSES\n",
        "=   KILLED BY SIGNAL: 9 (Killed)\n",
        "Process ended with signal: 9\n",
    ],
)
def test_sigkill_in_other_words_is_killed_with_the_cause_unknown(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "killed_unknown", triage.family
    assert triage.evidence, "the verdict cites the line that shows the SIGKILL"


@pytest.mark.parametrize(
    "text",
    [
        '4f1c2a3b9d0e   trainer:latest   "python train.py"   Exited (0) 5 minutes ago\n',
        '4f1c2a3b9d0e   trainer:latest   "python train.py"   Exited (1) 5 minutes ago\n',
        "+[05:25:15] rc=1\n",
        "rc=1370 bytes copied\n",
        "=   EXIT CODE: 139\n",
        "the process exit code: 9 means a usage error here\n",
    ],
)
def test_other_exit_statuses_are_not_read_as_sigkill(text: str) -> None:
    assert classify(text).cls == "not_oom"
