"""The families of the forty-fifth part (HPC and batch systems) and the forty-sixth
(accelerators and runtimes beyond CUDA): each is read in its own words, and a lookalike
beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import textwrap

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "The killed jobs end up on hold in the queue with HoldReasonCode = 34.\n",
        "$ isolate --cg --run --cg-mem 2000 -- ./prog\ncg-oom-killed:1\n",
        "yhrun: error: cn12: task 3: Killed\nyhrun: Terminating StepId=99.0\n",
    ],
)
def test_batch_systems_own_memory_kills(text: str) -> None:
    assert classify(text).cls in ("host_oom_killed", "killed_unknown")
    if "HoldReasonCode" in text or "cg-oom" in text:
        assert classify(text).cls == "host_oom_killed"


def test_a_cgroup_that_killed_nothing_is_no_kill() -> None:
    assert classify("cg-oom-killed:0\n").cls != "host_oom_killed"


def test_slurm_out_of_memory_warned_beside_exit_0_125_is_no_kill_in_prose() -> None:
    text = "Fix/slurm out of memory warning exit code 0:125\n"
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "The default /dev/shm size for docker is only 64MB,\nwhich is far too small for us.\n",
        "the default size of `/dev/shm` is restricted to 64MB and this is inadequate.\n",
        "/dev/shm\u5360\u7528\u7a7a\u95f4\u8d8a\u6765\u8d8a\u5927\uff0c\u6700\u540e\u8bad\u7ec3"
        "\u4e00\u534a\u65f6\u5931\u8d25\u4e86\n",
    ],
)
def test_dev_shm_told_too_small_is_shm(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


def test_dev_shm_of_a_size_with_no_trouble_is_not_shm() -> None:
    text = "Inside the pod /dev/shm is 8GB and nothing complains.\n"
    assert classify(text).cls != "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: NPU out of memory. Tried to allocate 52.00 MiB (NPU 0; 60.96 GiB total "
        "capacity; 59.36 GiB already allocated;\n",
        "RuntimeError: level_zero backend failed with error: 39 "
        "(UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)\n",
        "vk::Device::allocateMemory: ErrorOutOfDeviceMemory\n",
        "pyopencl._cl.MemoryError: clEnqueueMapBuffer failed: MEM_OBJECT_ALLOCATION_FAILURE\n",
        "RuntimeError: Resource exhausted: Attempting to reserve 2.10G at the bottom of memory. "
        "That was not possible. There are 1.20G free.\n",
        "Exception during initialization: D:\\a\\s\\onnxruntime\\core\\providers\\dml\\"
        "DmlExecutionProvider\\src\\BucketizedBufferAllocator.cpp(122)\\ort.pyd: "
        "Exception(1) 8007000E Not enough memory resources are available\n",
    ],
)
def test_accelerators_own_words_for_device_memory(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory "
        "in memory space vmem. Used 20.1M of 16.00M vmem.\n",
        "Fatal CUDA Error out of memory at hybrid.cu:790.\n"
        "Return value 2 from 'cudaMallocHost(&chunk, size)'.\n",
    ],
)
def test_a_cores_scratch_or_pinned_host_memory_is_not_the_cards(text: str) -> None:
    assert classify(text).cls == "not_oom"


@pytest.mark.parametrize(
    "text",
    [
        "Running the example results in the Linux OOM killer terminating the process.\n",
        "It uses all host RAM on the box and gets the workload OOM-killed.\n",
        "The second OOM at step 241 killed the train worker.\n",
        "The whole system went down, forced log out because run out of application memory.\n",
        "Exception during initialization: bad allocation\n",
    ],
)
def test_host_memory_told_by_what_ended_it(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "If the OOM killer kills the process, the job is retried.\n",
        "The OOM on the TPU's HBM killed the train worker.\n",
        "If you run out of application memory, close some apps.\n",
    ],
)
def test_a_condition_or_the_accelerators_memory_is_no_host_kill(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


def test_a_compiler_that_returned_minus_9_was_killed() -> None:
    assert classify("INFO:Neuron:Compile command returned: -9\n").cls == "killed_unknown"


def test_a_hard_wrapped_allocator_message_is_read_whole_for_its_reserve() -> None:
    """The message wrapped at 80 columns (at word boundaries, as a pasted terminal or a mail
    client leaves it): the reserve figure, three lines down, is still the message's own."""
    message = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 44.35 GiB of which 1.03 GiB is free. Including non-PyTorch memory, "
        "this process has 43.31 GiB memory in use. Of the allocated memory 30.72 GiB is "
        "allocated by PyTorch, and 9.28 GiB is reserved by PyTorch but unallocated. If "
        "reserved but unallocated memory is large try setting"
    )
    wrapped = "\n".join(textwrap.wrap(message, 80)) + "\n"
    assert classify(message + "\n").cls == "cuda_oom_fragmentation"
    assert classify(wrapped).cls == "cuda_oom_fragmentation"


def test_a_short_line_ends_the_message() -> None:
    """A line shorter than a terminal's width, or one that ends its sentence, is where the
    message stops: a figure two lines further down is not read as its own."""
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "Retrying with a smaller batch.\n"
        "Another run: 9.28 GiB is reserved by PyTorch but unallocated there\n"
    )
    assert classify(text).cls == "cuda_oom"
