"""The families of the sixty-seventh and sixty-eighth parts (recommendation, graph and GPU
tabular work; numerical and scientific GPU libraries): each is read in its own words, and a
lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "Runtime error: out of memory /opt/HugeCTR/include/general_buffer.hpp:71\n",
        "  what():  std::bad_alloc: CNMEM error at: /opt/rmm/mr/device/cnmem_memory_resource.hpp"
        "168: CNMEM_STATUS_OUT_OF_MEMORY\n",
        "terminate called after throwing an instance of 'boost::compute::opencl_error'\n"
        "  what():  Memory Object Allocation Failure\n",
        "[StateVectorCudaManaged.hpp][Line:120][Method:StateVectorCudaManaged]: Error in "
        "PennyLane Lightning: out of memory\n",
        "  what():  [custatevec] %out of memory in applyMatrix (line 88)\n",
    ],
)
def test_a_libraries_gpu_allocation_failing_in_its_own_words_is_the_cards(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "lightgbm.basic.LightGBMError: Out of Host Memory\n",
        "RuntimeError: [enforce fail at CPUAllocator.cpp:56] posix_memalign(&data, gAlignment, "
        "nbytes) == 0. 12 vs 0\n",
    ],
)
def test_a_host_allocation_refused_in_a_librarys_words_is_host_memory(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_the_shells_killed_written_over_a_progress_line_is_a_kill() -> None:
    text = "Total number of batches 9000\nKilledg in train batch: 4000 / 9000\n"
    assert classify(text).cls == "killed_unknown"


def test_rmms_device_resource_passing_on_an_illegal_address_is_no_oom() -> None:
    text = (
        "MemoryError: std::bad_alloc: CUDA error at: /x/rmm/mr/device/cuda_memory_resource.hpp"
        ":60: cudaErrorIllegalAddress an illegal memory    access was encountered\n"
    )
    assert classify(text).cls == "not_oom"


def test_a_petabyte_asked_of_a_simulator_is_an_absurd_request() -> None:
    text = (
        "ERROR:  [Experiment 0] Insufficient memory to run circuit c-1 using the Qasm simulator. "
        "Required memory: 1099511627776M, max memory: 15998M\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "absurd_request")


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # Another runtime error in HugeCTR's form, and a word that only starts like the kill.
        (
            "Runtime error: invalid argument /opt/HugeCTR/include/general_buffer.hpp:71\n",
            "cuda_oom",
        ),
        ("Killedfish in the pond\n", "killed_unknown"),
        ("Killed process 4123 (python) total-vm:1024kB\n", "killed_unknown"),
        # RMM running out of its pool is still the card's memory.
        ("rmm/mr/device/pool_memory_resource.hpp:188: Maximum pool size exceeded\n", "not_oom"),
    ],
)
def test_lookalikes_are_not_read_as_these_families(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
