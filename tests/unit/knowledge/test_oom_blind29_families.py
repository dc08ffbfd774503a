"""The families of the twenty-ninth part (HPC and scientific codes) and the thirtieth (LLM
training and serving in 2025 and 2026): each is read in its own words, and a lookalike
beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "ERROR: out of memory in /opt/relion/src/acc/acc_projector_impl.h at line 52 "
        "(error-code 2)\n",
        "ERROR: Insufficient memory on accelerator (src/GPU/gpu_extra.h:38)\n",
        "2026-01-02 10:00:00 ERROR    !!! Exception during processing !!! Allocation on device"
        "                   execution.py:430\n",
        "Out of Memory: Not enough space to allocate 2147483648 B DRAM buffer across 12 banks, "
        "where each bank needs to store 178956971 B\n",
    ],
)
def test_accelerator_memory_in_scientific_and_accelerator_wordings(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        # another error code at a source line
        "ERROR: invalid value in /opt/relion/src/acc/acc_projector_impl.h at line 52 "
        "(error-code 11)\n",
        # the header in a sentence, not the error's own line
        "Allocation on device 0 is what ComfyUI prints for an OOM, see the FAQ\n",
    ],
)
def test_their_lookalikes_are_not_accelerator_memory(text: str) -> None:
    assert classify(text).cls != "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "X!X ERROR: memory (RAM) is insufficient to perform this operation\n",
        "ERROR: Memory allocation failed for VEL in the routine INIT\n",
        "RuntimeError: Out of CPU memory\n",
        "the jobs keep getting held because of memory usage\n",
        "my_job.sh: line 9: 4242 Killed\nI can confirm that the error is caused by CPU OOM.\n",
        "status=137\nRoot cause: host cgroup OOM, not VRAM.\n",
        "last exit reason = OS_REASON_JETSAM\n",
    ],
)
def test_host_memory_in_scientific_codes_and_in_a_confirmed_cause(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        # a hedge, not a cause
        "Killed\nmaybe the error is caused by CPU OOM, could you check dmesg?\n",
        # a size no machine holds, before the host's words
        "*** mach_vm_map(size=18446744069414588416) failed (error code=3)\n"
        "Operating system error: Cannot allocate memory\n",
    ],
)
def test_a_hedged_cause_or_an_absurd_size_is_not_a_host_kill(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "ERROR on proc 0: Failed to allocate -156019200 bytes for array x\n",
        "cudaCustomAllocator out of memory\n[requestedSpace:             9223372036854775808 B]\n",
        "Error: CUDA error 11: invalid argument.\n"
        "Error: Failed to allocate 300x5000x20 GPU array\n",
        "opening remote shared memory object in shm_open: No such file or directory (err=9)\n",
    ],
)
def test_a_negative_absurd_or_invalid_request_or_a_missing_segment_is_not_an_oom(
    text: str,
) -> None:
    assert classify(text).cls == "not_oom"


@pytest.mark.parametrize(
    "text",
    [
        "mm_posix.c:88 UCX ERROR Not enough memory to write total of 4208440835 bytes. Please "
        "check that /dev/shm or the directory you specified has more available memory.\n",
    ],
)
def test_ucx_naming_dev_shm_is_shm(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


def test_a_bus_error_beside_an_empty_dev_shm_is_not_shm() -> None:
    text = (
        "RuntimeError: DataLoader worker (pid 12) is killed by signal: Bus error\n"
        "df -h /dev/shm\n"
        "Filesystem      Size  Used Avail Use% Mounted on\n"
        "tmpfs           492G     0  492G   0% /dev/shm\n"
    )
    assert classify(text).cls != "shm_exhausted"


def test_a_bus_error_beside_a_full_dev_shm_is_shm() -> None:
    text = (
        "RuntimeError: DataLoader worker (pid 12) is killed by signal: Bus error\n"
        "tmpfs            64M   64M     0 100% /dev/shm\n"
    )
    assert classify(text).cls == "shm_exhausted"
