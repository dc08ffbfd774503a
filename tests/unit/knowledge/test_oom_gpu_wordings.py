"""GPU memory failures in wordings beyond "CUDA out of memory" (TensorFlow, C++ and old CUDA,
other ecosystems): each reads as a GPU OOM, and a GPU failure stays the GPU's when a host
line is near.

Synthetic lines in each family's own words."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify

TF1_OOM_REPORT = """ResourceExhaustedError (see above for traceback): OOM when running the step
Current usage from device: /job:localhost/replica:0/task:0/device:GPU:0, allocator: GPU_0_bfc
  1.20GiB from conv5/Conv2D
"""


TF_GPU_TENSOR = (
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor "
    "with shape[64,256,56,56] and type float on /job:localhost/replica:0/task:0/device:GPU:0 "
    "by allocator GPU_0_bfc\n"
)


TF_CPU_TENSOR = (
    "2024-03-02 10:11:12.000001: W tensorflow/core/framework/op_kernel.cc:1828] OP_REQUIRES "
    "failed at cwise_ops_common.cc:82 : RESOURCE_EXHAUSTED: OOM when allocating tensor with "
    "shape[512,1024,1024] and type float on /job:localhost/replica:0/task:0/device:CPU:0 by "
    "allocator cpu\n"
)


def test_tf1_resource_exhausted_oom_without_when_allocating_is_gpu_memory() -> None:
    """TF1's 'ResourceExhaustedError (see above for traceback): OOM' and the tensors the GPU's
    BFC allocator lists ('Current usage from device: ... GPU_0_bfc') are GPU memory."""
    triage = classify(TF1_OOM_REPORT)
    assert (triage.cls, triage.family) == ("cuda_oom", "tf_resource_exhausted")
    usage_only = TF1_OOM_REPORT.splitlines()[1]
    assert classify(usage_only).cls == "cuda_oom"


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
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=405 error=2 : out of "
        "memory\nSegmentation fault (core dumped)\n",
        "F0101 12:00:00.000000  4242 syncedmem.cpp:56] Check failed: error == cudaSuccess (2 vs. "
        "0)  out of memory\n*** Check failure stack trace: ***\n",
        "terminate called after throwing an instance of 'CUDA::error'\n  what():  /src/alloc/"
        "CudaMallocPolicy.hpp(42):\nerror: out of memory\n",
    ],
)
def test_old_and_c_plus_plus_cuda_wordings_are_gpu_memory(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "cuda_oom", triage.family


def test_a_gpu_out_of_memory_on_a_host_named_gpu_is_still_the_gpus() -> None:
    text = "gpu-node-07 trainer[42]: RuntimeError: CUDA error: out of memory\n"
    assert classify(text).cls == "cuda_oom"


def test_tensorflow_launching_a_gpu_kernel_out_of_memory_is_gpu_memory() -> None:
    text = (
        "Non-OK-status: GpuLaunchKernel(FillPhiloxRandomKernelLaunch<Distribution>, num_blocks, "
        "block_size, 0, d.stream(), gen, data, size, dist) status: Internal: out of memory\n"
    )
    assert classify(text).cls == "cuda_oom"


def test_insufficient_gpu_memory_that_fails_an_executor_is_gpu_memory() -> None:
    text = (
        "[TRT-LLM] [RANK 1] [E] Failed to initialize executor on rank 1: Executor creation "
        "failed due to insufficient GPU memory.\n"
    )
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        'Error: DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")\n',
        "Error: System is out of GPU and shared host memory\n",
        "Error while calling cudaMalloc(&backward_data_workspace, workspace_size_in_bytes) in "
        "file dlib/dnn/cudnn_dlibapi.cpp:908. code: 2, reason: out of memory\n",
        "[h264_nvenc @ 0x55d0] OpenEncodeSessionEx failed: out of memory (10): (no details)\n"
        "Error opening video encoder : Cannot allocate memory\n",
    ],
)
def test_gpu_memory_in_other_ecosystems(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "cuda_oom", triage.family
