"""GPU memory exhausted: the many wordings of a failed device allocation, each family with
its class and confidence (fragmentation is decided later, from the allocator's numbers).

Every pattern is a bounded alternation of literals (no nested unbounded repeats), so a
megabyte-long line costs linear time; the scanning itself is in gpubot.knowledge.oom.scan.
"""

from __future__ import annotations

import re

from gpubot.knowledge.oom.libraries import LIBRARY_GPU_OOM
from gpubot.knowledge.oom.localized import LOCALIZED_GPU_OOM
from gpubot.knowledge.oom.reported import REPORTED_GPU_OOM
from gpubot.knowledge.oom.scan import Family
from gpubot.knowledge.oom.stacks import STACK_GPU_OOM


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | flags)


_I = re.IGNORECASE
# A line that only advises what to do if an OOM happens ("If you encounter CUDA out of memory,
# try --tile") is not evidence that one did.
_ADVICE = (
    r"\b(?:if|when|in case) you(?:'re| are)? (?:encounter|get|see|hit|run into|face|meet|have"
    r"|run out|running out)\b"
)
# A condition, a remedy or a guess in the sentence around a report told in prose ("if it
# OOMs", "to avoid OOM", "it might be the GPU memory", a question): not a report that it did.
_PROSE_HEDGE = _p(r"\b(?:if|whenever|avoid\w{0,3}|prevent\w{0,3}|might|maybe|could)\b|\?", _I)
# CUDA errors that are not a shortage of memory, as a failed call reports them.
_OTHER_CUDA_ERROR = (
    r"illegal (?:CUDA |cuda )?memory access|cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS"
    r"|unspecified launch failure|misaligned address"
    r"|busy or unavailable|cudaErrorDevicesUnavailable|CUDA_ERROR_DEVICE_UNAVAILABLE"
)
# TensorFlow and XLA name the device an allocation failed on: the CPU's allocators (and the
# pinned host pool) are host memory, and numpy's MemoryError inside TF's wrapper is too.
# A reporter's guess at the cause of something else ("keeps getting killed (maybe due to CUDA
# out of memory)"): not the message itself.
_GUESS = (
    r"\b(?:maybe|probably|possibly|perhaps|might be|could be)(?: due to| because of| caused by"
    r"| an?)? (?:the )?(?:CUDA|HIP) out of memory"
    # ... or what the program would have said had it been the card: "it might told you 'CUDA
    # out of Memory' instead of killed".
    r"|\b(?:CUDA|HIP) out of memory\W{0,3} instead of\b"
)
_HOST_DEVICE = (
    r"/device:CPU:\d|\bby allocator (?:cpu|mklcpu|cuda_host_bfc|gpu_host_bfc)\b"
    r"|MemoryError: Unable to allocate"
)

# A JAX or XLA run put on the CPU platform, in its own words or its reporter's.
XLA_ON_CPU_WORDS = (
    r"\b(?:use|using|run|running|ran)\s{1,3}(?:it\s{1,3})?(?:on\s{1,3})?(?:the\s{1,3}|a\s{1,3})?"
    r"CPU platform\b"
    r"|\bJAX_PLATFORMS=['\"]?cpu\b|\bjax_platform_name['\"]?,\s?['\"]cpu"
)
_XLA_ON_CPU = XLA_ON_CPU_WORDS

GPU_OOM: tuple[Family, ...] = (
    Family(
        "pytorch_cuda_oom",
        "cuda_oom",
        "high",
        _p(
            r"(?:CUDA|HIP|XPU|NPU|MPS backend) out of (?:the )?memory|\bCUDA OutOfMemoryError\b"
            # ... caught and named by the program (Pytorch-UNet's training loop).
            r"|\bDetected OutOfMemoryError!"
            r"|torch(?:\.cuda)?\.OutOfMemoryError"
            # ... as Jupyter heads its traceback, by the class's short name (PyTorch's and
            # CuPy's OutOfMemoryError are both the card's memory).
            r"|(?<![\w.])OutOfMemoryError\s{2,80}Traceback \(most recent call last\)"
        ),
        unless=_p(f"{_ADVICE}|{_GUESS}", _I),
    ),
    # The allocator's tail without its head: "Tried to allocate 2.00 MiB (GPU 0; 7.93 GiB
    # total capacity; ..." or "... GPU 0 has a total capacity of ...", or its bracketed
    # numbers alone: "(GPU 0; 15.75 GiB total capacity; 79.11 MiB already allocated; ...".
    Family(
        "pytorch_allocator_tail",
        "cuda_oom",
        "medium",
        _p(
            r"Tried to allocate \d[\d.]{0,20} ?\w{1,5}[ .]{1,3}\(?GPU \d{1,3}(?:; | has a total)"
            r"|\(GPU \d{1,3}; \d[\d.]{0,20} ?\w{1,5} total capacity; [^\n]{0,80}?"
            r"(?:already allocated|free;)"
            # The message's own last sentence, which only the allocator's OOM prints ("If
            # reserved memory is >> allocated memory try setting max_split_size_mb ...").
            r"|llocated memory(?: is large)? try setting "
            r"(?:max_split_size_mb|PYTORCH_(?:CUDA|HIP)_ALLOC_CONF\S{0,40}) to avoid fragmentation"
        ),
        # A logger that wraps its lines may break the message anywhere ("... 13.20 GiB. GPU 0"
        # / "has a total capacity of ...").
        wraps=True,
    ),
    Family(
        "cuda_runtime_oom",
        "cuda_oom",
        "high",
        _p(
            r"CUDA error: out of memory|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY"
            r"|cuda runtime error \(2\) : out of memory|cudaMalloc(?:Async)? failed"
            r"|cuMemAlloc(?:Async)? failed|CUDA driver error: out of memory"
            r"|\bHIP_ERROR_OutOfMemory\b|\bhipErrorOutOfMemory\b"  # ROCm's codes
        ),
        # An allocation call that failed with another error's name failed for that error
        # (a context poisoned by an earlier illegal access refuses every call after it); and
        # XLA's pinned host memory, refused with the driver's OOM code, is not the card's.
        unless=_p(
            _ADVICE
            + "|"
            + _OTHER_CUDA_ERROR
            + r"|bytes on host: CUDA_ERROR_"
            + r"|pinned memory \(\d{1,20} bytes\) could not be allocated",
            _I,
        ),
        # A request over the runtime's cap on one allocation, said so beside the error: the
        # cap refused it, not a full card (not_memory_limits.ALLOCATION_SIZE_CAP).
        unless_near=_p(r"\bsingle[- ]allocation (?:cap|limit)\b", re.IGNORECASE),
        unless_span=4,
    ),
    Family(
        "cudnn_cublas_alloc_failed",
        "cuda_oom",
        "high",
        _p(
            r"CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED|CUSOLVER_STATUS_ALLOC_FAILED"
            r"|CUSPARSE_STATUS_ALLOC_FAILED|CUFFT_ALLOC_FAILED"
            # CUFFT_ALLOC_FAILED as CUDA.jl's wrapper prints it.
            r"|\bCUFFTError\(code 2, cuFFT failed to allocate GPU or CPU memory\)"
        ),
    ),
    Family(
        "xla_resource_exhausted",
        "cuda_oom",
        "high",
        _p(
            r"(?:RESOURCE_EXHAUSTED|Resource exhausted):?\s{0,4}(?:\S{1,80}\s{1,4}){0,3}?"
            r"(?:Out of memory|Failed to allocate|failed to allocate|allocat\w{0,6} \d)",
        ),
        wraps=True,
        unless=_p(_HOST_DEVICE),
        # ... not when the run was put on XLA's CPU platform: the host's memory.
        unless_near=_p(_XLA_ON_CPU, _I),
        unless_span=6,
    ),
    # XLA's report of a program whose buffers did not fit the device: "Out of memory while
    # trying to allocate 2359296 bytes." over "BufferAssignment OOM Debugging."
    Family(
        "xla_resource_exhausted",
        "cuda_oom",
        "medium",
        _p(r"\bBufferAssignment OOM Debugging\b"),
        unless=_p(_HOST_DEVICE),
    ),
    # A TPU's (or any XLA device's) high-bandwidth memory: "Ran out of memory in memory space
    # hbm. Used 9.08G of 7.48G hbm. Exceeded hbm capacity by 1.60G."
    Family(
        "xla_resource_exhausted",
        "cuda_oom",
        "high",
        _p(
            r"\bRan out of memory in memory space hbm\b|\bExceeded hbm capacity by\b"
            # ... its report of what the program needed: "Total hbm usage >= 11.47G:" over
            # "Program hbm requirement 10.96G:".
            r"|\bTotal hbm usage >= [\d.]{1,9}[KMGT]\b"
            # XLA's runtime refusing a device buffer (a TPU's HBM, a GPU's memory).
            r"|\bError allocating device buffer: Attempting to allocate\b",
            _I,
        ),
    ),
    Family(
        "tf_resource_exhausted",
        "cuda_oom",
        "high",
        _p(
            r"OOM when allocating tensor"
            r"|ResourceExhaustedError\b.{0,200}?(?:failed to allocate memory|out of memory)"
            r"|failed to allocate memory \[Op:"
            r"|ran out of memory trying to allocate"
            # TF1's "ResourceExhaustedError (see above for traceback): OOM" and the tensors
            # report_tensor_allocations_upon_oom lists on the GPU's BFC allocator.
            r"|ResourceExhaustedError\b[^\n]{0,200}?\bOOM\b"
            r"|Current usage from device: \S{0,160}, allocator: GPU_\d{1,3}_bfc"
            # The BFC allocator's chunk map, which it prints only after a failed allocation.
            r"|\bbfc_allocator\.cc:\d{1,5}\] \*{20,}_{0,200}\s*$",
            _I,
        ),
        wraps=True,
        # The BFC allocator's own warning that a fallback was taken is not a failure.
        unless=_p(rf"caller indicates that this is not a failure|{_HOST_DEVICE}"),
    ),
    Family(
        "nccl_cuda_oom",
        "cuda_oom",
        "high",
        _p(r"Cuda failure \d{0,4} ?'?out of memory|Failed to CUDA (?:c|m)alloc", _I),
    ),
    Family(
        "inference_kv_cache",
        "cuda_oom",
        "high",
        _p(
            r"No available memory for the cache blocks"
            r"|larger than the maximum number of tokens that can be stored in KV cache"
            r"|is larger than the available KV cache memory"
            r"|on startup is less than desired GPU memory utilization"
            r"|Free memory on device \S{0,40}.{0,40}less than desired GPU memory"
            r"|Not enough memory\. Please try to increase --mem-fraction-static"
            r"|Not enough memory to handle \d{1,9} (?:prefill |total )?tokens"
            # SGLang: the weights took the share of the device the KV cache pool needed.
            # vLLM's profile leaving the KV cache nothing: "reserved for KV Cache is -1.05GiB".
            r"|\breserved for KV Cache is -\d"
            r"|\bleave no (?:GPU |device )?memory for the KV cache"
            r"|\bno (?:GPU |device )?memory (?:left |remaining )?for the KV cache"
            # An engine's own check that the cache does not fit: "Not enough memory for KV
            # cache", "Not enough memory for 24 blocks of KV cache".
            r"|\bNot enough memory for (?:the )?(?:\d{1,9} blocks of )?KV[- ]cache\b"
            # TensorRT-LLM: "maxTokensInPagedKvCache (29184) must be large enough to process
            # at least 1 sequence to completion".
            r"|\bmaxTokensInPagedKvCache \(\d{1,12}\) must be large enough to process at least"
        ),
        wraps=True,
    ),
    # The run said to hit CUDA's OOM, in a sentence: "While training bert ... I am getting
    # CUDA OOM". Not a condition or advice ("if you get CUDA OOM, ...").
    Family(
        "gpu_oom_in_prose",
        "cuda_oom",
        "medium",
        _p(
            r"\b(?:am|are|is|was|were|keep|kept|been) (?:getting|hitting|running into) "
            r"(?:a |an |the )?CUDA OOM\b"
            r"|\bI (?:still |always |keep |also )?(?:get|got|hit) (?:a |an |the )?CUDA OOM\b"
            # ... or in a title: "CUDA OOM due to model save", "why GPU OOM with zero3".
            r"|\bCUDA OOM (?:due to|during|while|after|with)\b|\bwhy (?:CUDA|GPU) OOM\b"
            r"|\b(?:frequent|recurring|repeated|random|constant) (?:GPU|CUDA) OOM errors?\b",
            _I,
        ),
        # A condition before the words ("if you get CUDA OOM"), not a time after them ("I get
        # cuda oom when saving the checkpoint"); advice on avoiding it.
        unless=_p(
            r"\b(?:if|when|whenever)\b[^.\n]{0,40}?\b(?:CUDA|GPU) OOM\b"
            r"|\b(?:avoid\w{0,3}|prevent\w{0,3})\b",
            _I,
        ),
        unless_in_sentence=True,
    ),
    # The card named as what ran out, in the reporter's words: "I still get problems which
    # are OOM on two 40G A100 GPUs", "it increases with every call until the GPU memory is
    # exhausted", "my GPU memory was near full because the previous kernel was still running".
    Family(
        "gpu_oom_in_prose",
        "cuda_oom",
        "medium",
        _p(
            r"\bOOMs? (?:on|in) (?!(?:the )?(?:CPU|host)\b)(?:\w{1,10} ){0,3}(?:GPUs?|A100s?"
            r"|H100s?|H200s?|V100s?|A10G?s?"
            r"|L40S?|A6000s?|RTX ?\d{3,4}s?)\b"
            # "On cards smaller than ~30 GiB the encoder alone does not fit, and the server
            # OOMs"; "This causes CUDA OOM during startup".
            r"|\b(?:on|with) (?:cards?|GPUs?) (?:smaller than|under|below|with less than) "
            r"~?\d{1,3} ?(?:GB|GiB|G)\b[^.\n]{0,100}?\bOOMs?\b"
            r"|\b(?:causes?|caused|causing|leads? to|led to|results? in|resulted in|triggers?"
            r"|triggered) (?:an? |the )?CUDA OOM\b"
            # "would cause OOM for a GPU node with 80G*8 VRAM"; "It runs out of memory on GPU
            # because I use the large images"; a TPU's "hbm OOM" (its device memory).
            r"|\bcaus(?:e|es|ed|ing) (?:an? )?OOM (?:for|on) (?:a |an |the |my )?(?:GPU|card)\b"
            r"|\b(?:runs?|ran|running) out of memory on (?:the )?GPU\b"
            r"|\bHBM (?:OOM|Out[- ]of[- ]Memory)\b"
            # The exception named as prose writes it: "raises the CudaOutOfMemory exception",
            # "still gives CUDA-out-of-memory issue"; "it just blow my h200's 140GB VRAM";
            # "out of memory on RTX4070 12G".
            r"|\bCudaOutOfMemory\b|\bCUDA-out-of-memory\b"
            r"|\bblow(?:s|n)? (?:up )?(?:my|the|all)\b[^.\n]{0,30}?\bVRAM\b"
            r"|\bout of memory on (?:an? |my |the |\d ?x ?)?(?:GPUs?|RTX ?\d{3,4}\w{0,3}"
            r"|GTX ?\d{3,4}\w{0,3}|A100|A800|H100|H200|V100|A10G?|L40S?|A6000|T4)\b"
            r"|\bGPU memory (?:is|was|gets|got|became|becomes|were) (?:near(?:ly)? |almost "
            r"|completely |totally )?(?:exhausted|full|used up|maxed out|insufficient)\b"
            # "I ran rsc.tl.embedding_density and had an out of memory error via CUDA".
            r"|\b(?:had|got|get|gets|hit|have) an? out of memory error (?:via|from|in|with|on) "
            r"(?:CUDA|the GPU)\b"
            # "GPU memory usage steadily increases over several hundred iterations until the
            # training crashes".
            r"|\bGPU memory(?: usage)? (?:steadily |keeps |continuously )?increas\w{0,3}\b"
            r"[^\n]{0,80}?\buntil (?:the )?(?:training|process|job|run|program) (?:crashes|crashed"
            r"|dies|died|fails|failed)\b",
            _I,
        ),
        unless=_PROSE_HEDGE,
        unless_in_sentence=True,
    ),
    # A crash put down to the card's memory, in a sentence a PR may wrap: "fixes the SIGABRT
    # on com.Metal.CompletionQueueDispatch when loading / large image models under GPU
    # memory pressure".
    Family(
        "gpu_oom_in_prose",
        "cuda_oom",
        "medium",
        _p(
            r"\b(?:SIGABRT|SIGSEGV|crash(?:es|ed)?|abort(?:s|ed)?|fail(?:s|ed|ures?)?)\b"
            r"(?:[^.\n]|\.(?=\w)){0,100}?\bunder (?:GPU|VRAM|device) memory pressure\b",
            _I,
        ),
        wraps=True,
        unless=_PROSE_HEDGE,
        unless_in_sentence=True,
    ),
    # A rank's OOM named as what caused the NCCL timeout after it: "high TPS will often lead
    # to a shard to OOM, causing a NCCL timeout". Not a condition in the same clause.
    Family(
        "gpu_oom_in_prose",
        "cuda_oom",
        "medium",
        _p(r"\bOOM\b[^.\n]{0,20}?\bcaus(?:ing|es|ed) (?:a |an |the )?NCCL timeout\b", _I),
        unless=_p(
            r"\b(?:if|whenever|might|maybe|could|would)\b[^.\n]{0,60}?\bOOM\b[^.\n]{0,20}?\bcaus",
            _I,
        ),
        unless_in_sentence=True,
    ),
    # An OOM said to happen, with the card's memory named beside it: "OOM happens in second
    # step of inference. The `torch.cuda.memory_*` also shows wrong memory stat".
    Family(
        "gpu_oom_in_prose",
        "cuda_oom",
        "medium",
        _p(r"\bOOM (?:happens|happened|occurs|occurred)\b", _I),
        near=_p(r"\btorch\.cuda\.|\bGPUs?\b|\bVRAM\b|\bCUDA\b", _I),
        span=1,
        unless=_p(
            r"\b(?:if|whenever|avoid\w{0,3}|prevent\w{0,3}|might|maybe|could)\b[^.!?\n]{0,40}?"
            r"\bOOM (?:happens|occurs)|\?",
            _I,
        ),
        unless_in_sentence=True,
    ),
    # ... and in Chinese, beside the error: "最少要求45G 显存\uff0c你这个只有24G" (it needs at
    # least 45G of VRAM, you only have 24G).
    Family(
        "gpu_oom_in_prose",
        "cuda_oom",
        "medium",
        _p(
            r"(?:最少|至少|最低)(?:要求|需要)?\s?\d{1,3}\s?G(?:B)?\s?(?:的)?(?:显存|顯存)"
            r"[^\n]{0,20}?(?:只有|仅有|僅有)\s?\d{1,3}\s?G"
        ),
        near=_p(r"max_split_size_mb|\bOOM\b|out of memory|报错|報錯", _I),
        span=4,
    ),
    # An OOM beside the answer that the model needs more of the card than the card has:
    # "requires at least 30GB GPU RAM to run ... a capacity of 24GB < 30GB".
    Family(
        "gpu_oom_in_prose",
        "cuda_oom",
        "medium",
        _p(
            r"\b(?:requires|needs|require|need) at least \d{1,4} ?(?:GB|GiB|G) (?:of )?"
            r"(?:GPU (?:RAM|memory)|VRAM|video memory)\b",
            _I,
        ),
        near=_p(r"\bOOM\b|\bout of memory\b", _I),
        span=4,
        unless=_p(r"\b(?:if|when|whenever|recommend\w{0,3}|suggest\w{0,3})\b", _I),
        unless_in_sentence=True,
    ),
    # A run said to OOM because PyTorch's caching allocator found no block: "OOMs at
    # iteration 3 ... the caching allocator can't find a contiguous block". Not advice.
    Family(
        "gpu_oom_in_prose",
        "cuda_oom",
        "medium",
        _p(
            r"\b(?:OOMs|OOMed|OOM'd|OOMing|runs? out of (?:GPU )?memory|ran out of (?:GPU )?memory)"
            r"\b[^\n]{0,200}?\bcaching allocator (?:can't|cannot|could not|couldn't|fails to"
            r"|failed to) find\b",
            _I,
        ),
        unless=_p(r"\b(?:if|whether|might|may|could)\b", _I),
        unless_in_sentence=True,
    ),
    # ONNX Runtime's DirectML provider: its GPU buffer allocator failing with E_OUTOFMEMORY.
    Family(
        "gpu_out_of_memory_generic",
        "cuda_oom",
        "medium",
        _p(r"\bDmlExecutionProvider\S{0,200}BucketizedBufferAllocator\.cpp"),
        near=_p(r"\b8007000E\b|\bE_OUTOFMEMORY\b|Not enough memory resources", _I),
        span=3,
    ),
    Family(
        "accelerate_batch_search",
        "cuda_oom",
        "medium",
        _p(r"No executable batch size found, reached zero"),
    ),
    *LIBRARY_GPU_OOM,
    *REPORTED_GPU_OOM,
    *LOCALIZED_GPU_OOM,
    *STACK_GPU_OOM,
    # Last resort for GPU wording not known above: "out of memory" said of a device, or of a
    # GPU allocator or pool named in one word ("CudaCustomAllocator out of memory").
    Family(
        "gpu_out_of_memory_generic",
        "cuda_oom",
        "medium",
        _p(
            # GPU as a word, not inside a host's name ("gke-pool-gpu-n1-7lpz ran out of memory").
            r"(?:(?<![\w-])GPU\b(?!-\w)|\bCUDA\b|\bcuda\b|\bCUDA_ERROR_|device memory)"
            r"[^\n]{0,80}?out of memory"
            # ... hyphenated as an adjective, in prose: "a CUDA out-of-memory error".
            r"|\b(?:CUDA|GPU) out-of-memory (?:error|exception)s?\b"
            # ... and several cards at once: "all 4 gpus are out of memory".
            r"|\bGPUs (?:are|were|ran|run|running|go|went) out of memory\b"
            r"|\bROCm error: out of memory\b"  # ggml's CUDA backend built for ROCm
            r"|cudaMalloc[^\n]{0,240}?out of memory"  # a C++ message names the call, then why
            # ... or its source file and line: "CUDA error: .../device_helpers.cuh(386): out of
            # memory" (XGBoost's GPU updater).
            r"|\bCUDA error:? [^\n]{0,240}?\.(?:cuh?|cpp|cc|hpp|h)\(\d{1,6}\):? out of memory"
            # RELION's accelerated code: "out of memory in .../acc_backprojector_impl.h at line
            # 37 (error-code 2)" (cudaErrorMemoryAllocation).
            r"|\bout of memory in \S{1,300} at line \d{1,6} \(error-code 2\)"
            r"|\bInsufficient memory on accelerator\b"  # LAMMPS' GPU package
            # Sophgo's BM1684 runtime: "bm_alloc_gmem failed", "Alloc Device Memory Failed!".
            r"|\bbm_alloc_gmem failed\b|(?-i:\bAlloc Device Memory Failed! Program Terminated)"
            # Kokkos's device memory space refusing an allocation (E3SM, LAMMPS' KOKKOS).
            r"|\bKokkos ERROR: (?:Cuda|CUDA|HIP|SYCL)\w{0,12} memory space failed to allocate\b"
            r"|\b(?:cuda|gpu|hip)\w{0,40}?(?:alloc|pool)\w{0,20}[^\n]{0,60}?out of memory"
            r"|out of (?:GPU|device|video) (?:and [\w ]{1,30}?)?memory"  # Blender Cycles
            r"|OpenEncodeSessionEx failed: out of memory"  # NVENC, the GPU's video encoder
            # Level Zero (Intel's oneAPI), Vulkan and OpenCL name the device's memory.
            r"|\b(?:UR|ZE)_RESULT_ERROR_OUT_OF_DEVICE_MEMORY\b|\bVK_ERROR_OUT_OF_DEVICE_MEMORY\b"
            # torch-directml: "Could not allocate tensor with 4719616 bytes. There is not
            # enough GPU video memory available!"
            r"|\bThere is not enough GPU video memory available\b"
            # DALI's device allocator; torchvision's GPU JPEG decoder out of memory
            # (NVJPEG_STATUS_ALLOCATOR_FAILURE is status 5).
            r"|\bCritical error in pipeline:[^\n]{0,120}?CUDA allocation failed\b"
            r"|^\s{0,8}CUDA allocation failed\s*$|\bnvjpegDecode\w{0,20} failed: 5\b"
            # The card's memory seen growing to an OOM: "the usage of graphic card memory
            # increased non-stopping and finally caused an OOM".
            r"|\b(?:GPU|graphics? card|video card) memory\b[^\n]{0,60}?\b(?:caused|causing"
            r"|led to|leads to|results? in|resulted in) (?:an? )?OOM\b"
            # faceswap's handler: "You do not have enough GPU memory available to train the
            # selected model at the selected settings".
            r"|\b(?:do not|don't) have enough GPU memory available to (?:train|run|load)\b"
            # ncnn on Vulkan: "vkAllocateMemory failed -2" (VK_ERROR_OUT_OF_DEVICE_MEMORY).
            r"|\bvkAllocateMemory fai\w{0,4}\s{0,2}-2\b"
            r"|\bErrorOutOfDeviceMemory\b|\b(?:CL_)?MEM_OBJECT_ALLOCATION_FAILURE\b"
            # ... and as boost::compute names OpenCL's error (LightGBM's GPU learner).
            r"|\bopencl_error\b[^\n]{0,80}?\bMemory Object Allocation Failure\b"
            r"|^\s{0,8}what\(\):\s{1,4}Memory Object Allocation Failure\s*$"
            # HugeCTR's CUDA check: "Runtime error: out of memory .../general_buffer.hpp:64".
            r"|\bRuntime error: out of memory \S{1,300}\.(?:hpp|cuh?|cpp|h):\d{1,6}"
            # PennyLane Lightning's GPU state vector and cuStateVec (CUDA-Q, qsim).
            r"|\[Method:\w{0,40}Cuda\w{0,40}\]: Error in PennyLane Lightning: out of memory\b"
            r"|\[custatevec\] %?out of memory\b"
            # XLA's TPU allocator: "Attempting to reserve 3.95G at the bottom of memory. That
            # was not possible." (the HBM summary follows).
            r"|\bAttempting to reserve [\d.]{1,10}[KMGT] at the (?:bottom|top) of memory\. "
            r"That was not possible\b"
            r"|\bthrowing out of memory GPU_MGR\b"  # HeavyDB's GPU buffer manager
            r"|\b(?:InitializeEncoder|CreateBitstreamBuffer|CreateInputBuffer|RegisterResource)"
            r" failed: out of memory \(10\)"  # ffmpeg's NVENC: NV_ENC_ERR_OUT_OF_MEMORY
            r"|Requested amount of GPU memory \(\d{1,20} bytes\) could not be allocated"
            # Torch 0.x's THC check and glog's CHECK on a CUDA call: code 2 is
            # cudaErrorMemoryAllocation.
            r"|THCudaCheck FAIL[^\n]{0,400}?(?:out of memory|error=2\b)"
            # ... and THC's storage allocator: "out of memory at .../THC/generic/THCStorage.cu:58".
            r"|\bout of memory at \S{0,300}/THC/\S{1,200}\.cu:\d{1,6}"
            r"|cudaSuccess \(2 vs\.? 0\)|\bcudaErrorMemoryAllocation\b"
            # Caffe2's enforce: "error == cudaSuccess. 2 vs 0. Error at: ...: out of memory".
            r"|\berror == cudaSuccess\. 2 vs 0\b"
            r"|GpuLaunchKernel[^\n]{0,400}?out of memory"  # TF launching a GPU kernel
            r"|\bfailed due to insufficient GPU memory\b"  # TensorRT-LLM's executor
            # The CUDA samples' wording: "Failed to allocate device vector A (error code out
            # of memory)!".
            r"|\bFailed to allocate device [^\n]{0,60}?\(error code out of memory\)",
            _I,
        ),
        # A C++ exception's what() names the CUDA allocator's source file on one line and
        # the error on the next.
        wraps=True,
        # A CUDA call for page-locked host memory named on the next line: not the card's.
        unless_near=_p(r"\b(?:cudaMallocHost|cudaHostAlloc|cuMemHostAlloc|cuMemAllocHost)\("),
        unless_span=1,
        # A host's name may hold "gpu" (gpu-node-7): the kernel's OOM killer on it is the host's.
        unless=_p(
            r"Java heap|OutOfMemoryError: (?:Java|GC|Metaspace)|Kill(?:ed)? process"
            r"|Memory cgroup out of memory|\boom[-_]kill|invoked oom-killer"
            r"|bytes on host: CUDA_ERROR_"  # XLA's pinned host memory
            # ... page-locked host memory refused on the line itself ("cudaHostAlloc failed,
            # ret[2], out of memory": MindSpore's data pipeline arena).
            r"|\b(?:cudaMallocHost|cudaHostAlloc|cuMemHostAlloc|cuMemAllocHost) failed\b"
            r"|pinned memory \(\d{1,20} bytes\) could not be allocated|"  # CuPy's staging
            + _ADVICE
            + f"|{_GUESS}"
            + r"|\bif (?:you|it) (?:do not|don't|does not|doesn't) have enough\b"
            # A reader's impression of someone else's log: "it looks like you're running out
            # of device memory".
            + r"|\b(?:looks|seems) like (?:you're|you are|you) (?:running|ran|run) out of\b"
            # A list of what it could have been ("could be out of memory killer, segfault").
            + r"|\b(?:could|might|may) be (?:the )?out of memory\b"
            # A CUDA build out of the host's memory: "Cuda build runs out of memory on default
            # runner" (the compiler's, not the card's).
            + r"|\bCUDA (?:build|compil\w{1,5}|code)\b[^\n]{0,30}?\bout of memory"
            r"|\bout of memory (?:when|while) (?:compiling|building|linking)\b"
            # The host's memory ran out first: "Out of CPU memory before it out of GPU memory".
             + r"|\bbefore (?:it |the GPU |the card )?(?:runs? |ran |goes |went |is )?out of "
            r"(?:GPU|device|video) memory\b"
            # A guess between the card and the host ("gpu or ram went out of memory").
            + r"|\b(?:GPU|VRAM) or (?:the )?(?:CPU |system |host )?(?:RAM|memory)\b"
            + r"|\b(?:RAM|CPU) or (?:the )?(?:GPU|VRAM)\b"
            # The line's error is an illegal address; the OOM it names is told in passing.
            + r"|\billegal (?:CUDA )?memory access\b",
            _I,
        ),
    ),
    # RAPIDS (cuDF, Spark RAPIDS): its CUDA exception, and its device store's failed allocation.
    Family(
        "gpu_out_of_memory_generic",
        "cuda_oom",
        "medium",
        _p(
            r"\bcudf\.CudaException: out of memory\b"
            r"|\bDevice allocation of \d{1,20} bytes failed, device store has\b"
        ),
    ),
)
