"""The families added so the rules read wordings beyond the train split: host allocations
refused with ENOMEM, the kubelet's CgroupOOM, userspace OOM killers, the shell's "Killed" in
markdown or another language, NCCL's shm transport by source file, evictions for disk with
exit code 137, absurd requests sized in bare bytes, PyTorch's bracketed numbers alone, and
the lookalikes each must not claim. One short line per wording; the corpus holds real ones."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: [enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't "
        "allocate memory: you tried to allocate 1073741824 bytes. Error code 12 (Cannot allocate "
        "memory)",
        "RuntimeError: [enforce fail at alloc_cpu.cpp:81] data. DefaultCPUAllocator: not enough "
        "memory: you tried to allocate 1073741824 bytes.",
        "    self.pid = os.fork()\nOSError: [Errno 12] Cannot allocate memory",
        "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 8.00 GiB for an array with "
        "shape (1024, 1024, 1024) and data type float64",
        "MemoryError: Unable to allocate 2.00 GiB for an array with shape (2, 1073741824)",
        "terminate called after throwing an instance of 'std::bad_alloc'\n"
        "  what():  std::bad_alloc",
        "OSError: [WinError 1455] The paging file is too small for this operation to complete",
        "fatal error: runtime: out of memory",
        "memory allocation of 8589934592 bytes failed",
    ],
)
def test_a_host_allocation_refused_is_host_memory(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "host_allocation_refused")
    assert "ENOMEM" in triage.advice[0], "the advice says the kernel refused, not killed"
    assert triage.evidence


@pytest.mark.parametrize(
    "text",
    [
        "ImportError: /usr/lib/aarch64-linux-gnu/libgomp.so.1: cannot allocate memory in static "
        "TLS block",
        "misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Cannot "
        "allocate memory",
        "NCCL WARN NET/OFI Unable to register memory (type = 1) for device 0. RC: 12, Error: "
        "Cannot allocate memory",
        "fi_mr_reg failed, ret is:-12, Cannot allocate memory",
        "ggml_cuda_host_malloc: failed to allocate 1900.00 MiB of pinned memory: Cannot allocate "
        "memory",
    ],
)
def test_enomem_for_locked_memory_or_tls_is_not_a_shortage_of_ram(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


def test_a_line_that_only_advises_about_a_cuda_oom_is_not_one() -> None:
    host = classify(
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate 264896512 bytes. "
        "Error code 12 (Cannot allocate memory)\n"
        "If you encounter CUDA out of memory, try to set --tile with a smaller number."
    )
    assert host.cls == "host_oom_killed"
    alone = classify("Tip: when you get CUDA out of memory errors, lower the batch size.")
    assert alone.cls == "not_oom"


@pytest.mark.parametrize(
    ("text", "family"),
    [
        (
            "  Warning  CgroupOOM  28s  kubelet  Cgroup OOM encountered, victim process: stress, "
            "pid: 4711",
            "kernel_oom_killer",
        ),
        (
            "systemd-oomd[812]: Killed /user.slice/user-1000.slice/session-3.scope due to memory "
            "pressure for /user.slice being 71.20% > 50.00% for > 20s with reclaim activity",
            "userspace_oom_killer",
        ),
        (
            "The process is killed by SIGKILL by OOM killer due to high memory usage.",
            "kernel_oom_killer",
        ),
        (
            "Some of your processes may have been killed by the cgroup out-of-memory handler.",
            "kernel_oom_killer",
        ),
    ],
)
def test_oom_kills_in_the_kubelets_and_userspace_killers_words(text: str, family: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", family)


@pytest.mark.parametrize(
    "text",
    [
        "epoch 3 done\n**Killed**",
        "loading shards\nKilled`",
        "loading shards\n`Killed`",
        "> Killed",
        "Writing metrics\n已杀死",
        "[1]+  已杀死               python train.py",
        "Getötet",
        "zsh: killed     python3 train.py",
    ],
)
def test_the_shells_killed_in_markdown_or_another_language_is_a_sigkill(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("killed_unknown", "sigkill_cause_unknown")


@pytest.mark.parametrize(
    "text",
    [
        "I killed the job myself and restarted it.",
        "Killed processes are listed below.",
        "the pod was not killed",
    ],
)
def test_killed_in_a_sentence_is_not_the_shells_job_report(text: str) -> None:
    assert classify(text).cls == "not_oom"


def test_nccls_shm_transport_is_known_by_its_source_file() -> None:
    triage = classify(
        "host:2143:2561 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No "
        "space left on device\nhost:2143:2561 [1] NCCL INFO include/shm.h:41 -> 2"
    )
    assert (triage.cls, triage.family) == ("shm_exhausted", "nccl_shm_segment")


@pytest.mark.parametrize(
    "text",
    [
        "reason=Evicted\nThe node was low on resource: ephemeral-storage.\nexitCode 137",
        "Evicted: Pod The node had condition: [DiskPressure].\nexit code: 137",
        "Message: Pod ephemeral local storage usage exceeds the total limit of containers 4Gi.",
        "The node was low on resource: pids.",
    ],
)
def test_an_eviction_for_disk_or_pids_outranks_the_bare_sigkill(text: str) -> None:
    triage = classify(text, exit_code=137)
    assert (triage.cls, triage.family) == ("not_oom", "ephemeral_storage_eviction")
    assert "not memory" in triage.advice[0]


def test_a_memory_eviction_with_exit_137_stays_host_memory_and_137_alone_says_unknown() -> None:
    assert classify("The node was low on resource: memory.", exit_code=137).cls == (
        "host_oom_killed"
    )
    assert classify("", exit_code=137).cls == "killed_unknown"


def test_an_absurd_request_in_bare_bytes_against_free_and_total_memory() -> None:
    absurd = classify(
        "gpu_async_1 cuMemAllocAsync failed to allocate 1225195446464 bytes: RESOURCE_EXHAUSTED: "
        ": CUDA_ERROR_OUT_OF_MEMORY: out of memory\n"
        " Reported by CUDA: Free memory/Total memory: 22635544576/85095874560"
    )
    assert (absurd.cls, absurd.family) == ("not_oom", "absurd_request")
    assert absurd.numbers["total_bytes"] == 85095874560
    plausible = classify(
        "gpu_async_1 cuMemAllocAsync failed to allocate 42949672960 bytes: RESOURCE_EXHAUSTED: "
        ": CUDA_ERROR_OUT_OF_MEMORY: out of memory\n"
        " Reported by CUDA: Free memory/Total memory: 22635544576/85095874560"
    )
    assert plausible.cls == "cuda_oom"
    assert plausible.numbers["requested_bytes"] == 42949672960


def test_pytorchs_bracketed_numbers_alone_are_a_cuda_oom() -> None:
    triage = classify(
        "(GPU 0; 15.75 GiB total capacity; 79.11 MiB already allocated; 3.62 MiB free; 86.00 "
        "MiB reserved in total by PyTorch)"
    )
    assert (triage.cls, triage.family) == ("cuda_oom", "pytorch_allocator_tail")


@pytest.mark.parametrize(
    "text",
    [
        "CudaCustomAllocator out of memory\n [requestedSpace: 148560384 B]",
        "RuntimeError: Not enough memory to handle 4096 prefill tokens. You need to decrease "
        "`--max-batch-prefill-tokens`",
        "[TRT] Requested amount of GPU memory (1073741824 bytes) could not be allocated. There "
        "may not be enough free memory for allocation to succeed.",
    ],
)
def test_gpu_memory_in_an_allocators_or_servers_own_words(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


def test_a_kernels_shared_memory_limit_is_neither_dev_shm_nor_gpu_memory() -> None:
    triage = classify(
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: "
        "131072, Hardware limit: 101376. Reducing block sizes or `num_stages` may help."
    )
    assert (triage.cls, triage.family) == ("not_oom", "kernel_shared_memory_limit")
    assert triage.advice
