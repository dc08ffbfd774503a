"""Memory exhaustion in the words of libraries beyond PyTorch, TensorFlow and JAX.

Data-science and inference libraries report an exhausted GPU in their own wording, often
wrapped in an exception whose name speaks of host memory (`MemoryError: std::bad_alloc`,
`java.lang.OutOfMemoryError`): RAPIDS (RMM, cuDF, Spark RAPIDS), CuPy, thrust, ONNX Runtime,
TensorRT, PaddlePaddle, and PyTorch's cudaMallocAsync backend. These families are tried before
the host families, so the device wording wins over the wrapper's. Patterns follow the bounds of
*_families: literals and bounded repeats only.
"""

from __future__ import annotations

import re

from gpubot.knowledge.oom.scan import Family
from gpubot.knowledge.oom.stacks import ORT_CPU


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | flags)


_SIZE = r"\d[\d.,]{0,20} ?[KMGT]?i?B\b"

LIBRARY_GPU_OOM: tuple[Family, ...] = (
    # Serving engines finding no room on the device for their KV cache, in their own
    # words: vLLM's check raising from its frame (`raise_if_cache_size_invalid(`, the
    # message cut off below it), SGLang's out-of-memory told with its `mem_fraction_static`,
    # "the default vLLM KV cache size is too large" beside an out-of-memory error.
    Family(
        "serving_kv_cache_oom",
        "cuda_oom",
        "medium",
        _p(
            r"\braise_if_cache_size_invalid\(|\bno available memory for the cache blocks\b"
            r"|\bout[- ]of[- ]memory errors?\b[^\n]{0,80}?\bmem_fraction_static\b"
            r"|\bmem_fraction_static\b[^\n]{0,160}?\bout[- ]of[- ]memory errors?\b",
            re.IGNORECASE,
        ),
    ),
    Family(
        "serving_kv_cache_oom",
        "cuda_oom",
        "medium",
        _p(r"\bKV cache (?:size )?(?:is )?too large\b", re.IGNORECASE),
        near=_p(r"\bout[- ]of[- ]memory\b", re.IGNORECASE),
        span=3,
    ),
    # Loaders and UIs that check the card's free memory before they allocate, in their own
    # words: ExLlama's autosplit finding no device left for the model and its cache
    # ("Insufficient VRAM for model and cache"), ComfyUI's attention refusing a resolution
    # ("Not enough memory, use lower resolution (max approx. 1728x1728). Need: 15.2GB free,
    # Have:5.4GB free").
    Family(
        "loader_vram_check",
        "cuda_oom",
        "medium",
        _p(
            r"\bInsufficient VRAM for (?:the )?model and cache\b"
            r"|\bNot enough memory, use lower resolution \(max approx\. \d{2,5}x\d{2,5}\)"
            # Gaudi's device memory allocator; a graphics engine's own words.
            r"|\bMODULE:PT_DEVMEM Allocation failed\b|\bNot enough video memory\b",
            re.IGNORECASE,
        ),
    ),
    # ONNX Runtime's CUDA execution provider: its BFC arena failing for a buffer.
    Family(
        "onnxruntime_cuda_arena",
        "cuda_oom",
        "high",
        _p(
            r"\bCUDA (?:execution provider|EP)\b[^\n]{0,80}?\bBFC ?Arena\b[^\n]{0,200}?"
            r"\bFailed to allocate memory\b",
            re.IGNORECASE,
        ),
    ),
    # RMM, the allocator under cuDF, cuML and Spark RAPIDS: a device memory resource (its
    # header path names it) or its pool refused. The exception around it may say MemoryError
    # or java.lang.OutOfMemoryError; the memory is the GPU's.
    Family(
        "rmm_device_memory",
        "cuda_oom",
        "high",
        _p(
            r"rmm/mr/device/\w{1,60}\.hpp:\d{1,6}: (?:Maximum pool size exceeded|cuda\w{0,40}"
            r"|out of memory)|out_of_memory: (?:CUDA error|RMM failure)"
            r"|RMM failure at:[^\n]{0,240}?(?:Maximum pool size exceeded|out of memory)"
            r"|RMM_ERROR_OUT_OF_MEMORY|rmm::out_of_memory"
            # RMM's older CNMEM pool: "CNMEM error at: .../cnmem_memory_resource.hpp168:
            # CNMEM_STATUS_OUT_OF_MEMORY".
            r"|\bCNMEM_STATUS_OUT_OF_MEMORY\b",
            re.IGNORECASE,
        ),
        # The device resource passing on another CUDA error: an illegal address is not memory.
        # Triton's fixed CNMEM pool full and the request served from pinned host memory
        # instead is a warning, not a failure.
        unless=_p(
            r"\bcudaErrorIllegalAddress\b|\billegal memory\s{1,12}access\b"
            r"|\bfalling back to pinned system memory\b",
            re.IGNORECASE,
        ),
    ),
    # RMM's pool asked for at start-up is larger than what the GPU has free (another process
    # holds it): only evidence when the pool then fails to start.
    Family(
        "rmm_pool_larger_than_free",
        "cuda_oom",
        "medium",
        _p(r"Initial RMM allocation\([^)\n]{1,40}\) is larger than free memory"),
        near=_p(r"Could not initialize RMM|RMM failure|pool size exceeds"),
        span=4,
    ),
    # Spark RAPIDS retries a task on GPU OOM and gives up with these (the Cpu* ones are the
    # host's, in LIBRARY_HOST_OOM).
    Family(
        "spark_rapids_gpu_oom",
        "cuda_oom",
        "high",
        _p(r"\b(?:Gpu)?(?:SplitAnd)?RetryOOM\b|\bGPU OutOfMemory\b"),
    ),
    # CuPy's memory pool (also under Chainer): "out of memory to allocate N bytes (total M
    # bytes)" and "Out of memory allocating 25,600,000 bytes (allocated so far: ...)".
    Family(
        "cupy_memory_pool",
        "cuda_oom",
        "high",
        _p(
            r"out of memory to allocate \d{1,20} bytes \(total \d{1,20} bytes\)"
            r"|Out of memory allocating [\d,]{1,30} bytes \(allocated so far: [\d,]{1,30} bytes\)",
            re.IGNORECASE,
        ),
    ),
    # thrust's algorithms allocate their scratch space on the device.
    Family(
        "thrust_device_alloc",
        "cuda_oom",
        "medium",
        _p(
            r"\b(?:parallel_for|for_each|transform|reduce|radix_sort|merge_sort|sort|scan|copy_if"
            r"|unique)\w{0,20} failed: out of memory|thrust::system::detail::bad_alloc"
            # ... and a CUDA helper's check thrown through thrust's system_error, naming the
            # header it failed in: "what():  .../device_helpers.cuh(456): out of memory".
            r"|thrust::system::system_error'\s{1,8}what\(\):\s{0,4}\S{1,300}\.cuh\(\d{1,6}\): "
            r"out of memory\b"
        ),
    ),
    # ONNX Runtime's arena for the CUDA execution provider; the CPU provider's arena says so.
    Family(
        "onnxruntime_arena",
        "cuda_oom",
        "medium",
        _p(
            r"BFCArena::AllocateRawInternal[^\n]{0,200}?Failed to allocate memory"
            r"|Failed to allocate memory for requested buffer of size \d"
        ),
        unless=_p(ORT_CPU),
    ),
    # TensorRT's builder and runtime, old and new wordings.
    Family(
        "tensorrt_allocation",
        "cuda_oom",
        "high",
        _p(
            r"Requested amount of (?:GPU )?memory \(\d{1,20} bytes\) could not be allocated"
            r"|OutOfMemory Error in allocate|Error Code 2: OutOfMemory"
            r"|Cuda Error in (?:\S{1,80})?allocate: 2 \(out of memory\)"
            r"|Out of memory error during getBestTactic",
            re.IGNORECASE,
        ),
    ),
    # PaddlePaddle: "Out of memory error on GPU 0. Cannot allocate 98.000244MB memory on GPU 0".
    Family(
        "paddle_device_oom",
        "cuda_oom",
        "high",
        _p(
            r"Out of memory error on (?:GPU|XPU|NPU|MLU)(?: \d{1,3}|\b)"
            r"|Cannot allocate " + _SIZE + r" memory on (?:GPU|XPU|NPU|MLU) \d{1,3}"
        ),
    ),
    # Paddle's allocator throwing BadAlloc, with a GPU kernel's Alloc in the C++ traceback
    # below it ("phi::ScaleKernel<float, phi::GPUContext>").
    Family(
        "paddle_device_oom",
        "cuda_oom",
        "medium",
        _p(r"instance of 'paddle::memory::allocation::BadAlloc'"),
        near=_p(r"\bphi::GPUContext\b|\bplatform::CUDAPlace\b|\bGPUPlace\b"),
        span=12,
    ),
    # SGLang's scheduler finding no room in its KV-cache pool for a batch's tokens: "Prefill
    # out of memory. Try to lower your batch size." (the pool is the card's memory, sized at
    # start; verdict._kv_pool_not_full reads the tokens it printed).
    Family(
        "serving_kv_pool_full",
        "cuda_oom",
        "medium",
        _p(r"\b(?:Prefill|Decode) out of memory\. Try to lower your batch size\b"),
    ),
    # XGBoost's device caching allocator refusing a request: "Memory allocation error on
    # worker 3: Caching allocator" with "- Free memory: N" and "- Requested memory: N" below.
    Family(
        "xgboost_caching_allocator",
        "cuda_oom",
        "high",
        _p(r"Memory allocation error on worker \d{1,6}: Caching allocator\b"),
    ),
    # MindSpore's device memory pool asked for more than the device holds: "TotalUsedMemStatistics
    # : N plus TotalUsedByEventMemStatistics : 0 and plus alloc size : M is more than total
    # mem size : T" (mem_dynamic_allocator.cc, on GPUs and Ascend NPUs alike).
    Family(
        "mindspore_device_pool",
        "cuda_oom",
        "high",
        _p(
            r"\bTotalUsedMemStatistics : \d{1,20} plus [^\n]{0,80}?alloc size : \d{1,20} is more "
            r"than total mem size : \d{1,20}"
        ),
    ),
    # ggml (llama.cpp, Ollama) failing to allocate a model's buffer on a device: "unable to
    # allocate CUDA2 buffer" (its CPU buffer is the host's, in host_families).
    Family(
        "ggml_device_buffer",
        "cuda_oom",
        "high",
        _p(
            r"\b(?:unable|failed) to allocate (?:a )?(?:CUDA|ROCm|HIP|Metal|Vulkan|SYCL)\d{0,2} "
            # ... LM Studio naming the backends it tried: "unable to allocate CUDA0 <and
            # Vulcan0> buffer".
            r"(?:<[^>\n]{1,30}> )?buffer\b"
            # ... its Vulkan backend's own words: "ggml_vulkan: Device memory allocation of size
            # 17368219904 failed."
            r"|\bDevice memory allocation of size \d{1,20} failed\b"
        ),
    ),
    # Ascend's error code for a failed allocation, with the device allocator named in its
    # traceback: "Memory_Allocation_Failure(EL0004): Failed to allocate memory" over "Call
    # rtMalloc fail ... device_id:0" or "allocate device memory failed".
    Family(
        "ascend_device_alloc_failed",
        "cuda_oom",
        "high",
        _p(r"\bMemory_Allocation_Failure\(EL0004\)"),
        near=_p(
            r"\bCall rtMalloc fail\b|\ballocate device memory failed\b|\bdevice_allocator\.cc\b"
        ),
        span=8,
    ),
    # Ascend's runtime (CANN) failing a device allocation: "alloc device memory failed,
    # runtime result = 207001" (ACL_ERROR_RT_MEMORY_ALLOCATION), the NPU's memory gone.
    Family(
        "ascend_device_alloc_failed",
        "cuda_oom",
        "high",
        _p(r"\balloc device memory failed, runtime result = 207001\b"),
    ),
    # PyTorch's cudaMallocAsync backend (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync).
    Family(
        "cuda_malloc_async_limit",
        "cuda_oom",
        "high",
        _p(r"Allocation on device \d{0,3} ?would exceed allowed memory"),
    ),
)

LIBRARY_HOST_OOM: tuple[Family, ...] = (
    # Spark RAPIDS gives up on host (off-heap) memory with the Cpu* twins of its retry OOMs.
    Family(
        "spark_rapids_host_oom",
        "host_oom_killed",
        "medium",
        _p(r"\bCpu(?:SplitAnd)?RetryOOM\b|\bCPU OutOfMemory\b"),
    ),
    # An inference server's check before it loads a model, that the host's memory can hold
    # it (Ollama: "model requires more system memory (X GiB) than is available (Y GiB)"): host
    # memory short, as vLLM's start-up check on free GPU memory is the GPU's. Memory of the
    # GPU (VRAM) named instead is not the host's.
    Family(
        "host_memory_precheck",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:requires|needs|required|needed) more (?:system |host |CPU )?(?:memory|RAM)"
            r"\b[^\n]{0,60}? than (?:is )?(?:available|free|allowed)\b"
            # vLLM's CPU backend: "Available memory on node 0 (149.11/692.65 GiB) on kv cache
            # allocation is less than requested memory for kv (206.54/207.8 GiB)".
            r"|\bAvailable memory on node \d{1,3} \([^)\n]{1,40}\) on kv cache allocation is "
            r"less than requested memory\b",
            re.IGNORECASE,
        ),
        unless=_p(r"\b(?:GPU|VRAM|video memory|device memory|CUDA)\b", re.IGNORECASE),
    ),
)
