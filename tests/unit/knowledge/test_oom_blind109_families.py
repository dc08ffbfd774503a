"""The families of the hundred-and-ninth to hundred-and-twelfth parts (LLM serving and
fine-tuning threads; Kubernetes and Slurm operators' reports; OOMs told in words; stacks other
than PyTorch's message): each is read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "Looks like the array jobs are hitting the SLURM memory limits; raise mem_mb.\n",
        "Keep the batch container from being killed on OOM events under cgroups v2\n",
        "Both the scheduler pods crashed due to the agent's growing memory usage.\n",
        "Switching checkpoints the RAM usage spikes up and makes the program crash.\n",
        "The monitor shows it filling up the RAM within seconds before the crash.\n",
        "Each pass adds 2gb into ram = laptop crashes at fill\n",
        "The kubelet reports memory pressure and starts evicting pods on two nodes.\n",
        # A crash with nothing printed, and the maintainer's finding beside it.
        "The app crashes without error at the loader node.\n"
        "It's the 16GB RAM that's the issue, offloading only starts later.\n",
    ],
)
def test_a_host_kill_told_or_found_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "CudaOutOfMemory when training the adapter on one A10G\n",
        "ZeRO-2 still gives CUDA-out-of-memory issue on the 7B model\n",
        "trtllm-build of the 6B model out of memory on RTX3060 12G\n",
        "fixes the abort in the completion handler when decoding long videos\n"
        "under GPU memory pressure\n",
        "Error: terminate called after throwing an instance of "
        "'paddle::memory::allocation::BadAlloc'\n"
        "2   void phi::AddKernel<float, phi::GPUContext>(phi::GPUContext const&)\n",
        "Out of memory error on GPU, although nvidia-smi shows free memory\n",
        "W0101 bfc_allocator.cc:512] ****************************************________\n",
        "RuntimeError: Decode out of memory. Try to lower your batch size.\n",
        # Told in words, placed on the card by the lines around them.
        "I'm encountering an Out of Memory (OOM) error during fine-tuning on a 6 GB GPU.\n",
        "I used one A100 40G to finetune the 7b model, OOM, what should I change?\n",
        "32 GB VRAM OOM during video inference \u2014 is this expected?\n",
        "Megatron \u957f\u5e8f\u5217\u8bad\u7ec3\u62a5\u9519 OOM\n",
    ],
)
def test_the_cards_memory_told_is_a_gpu_oom(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


def test_the_host_named_in_the_reports_own_sentence_decides_it() -> None:
    text = (
        "Running on 8 H100 (80G) with the default config.\n"
        "When setting world_size=8, the CPU RAM (1T) runs out of memory (OOM).\n"
    )
    assert classify(text).cls == "host_oom_killed"


def test_a_shared_memory_limit_reached_is_shared_memory() -> None:
    text = "The segments reached the limit of /dev/shm and later queries failed.\n"
    assert classify(text).cls == "shm_exhausted"
    pr = "This PR fixes the Shared Memory Limit error reported in the training issue.\n"
    assert classify(pr).cls == "shm_exhausted"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A KV pool that refused a batch it printed room for: its accounting, not the card.
        (
            "RuntimeError: Prefill out of memory. Try to lower your batch size.\n"
            "Try to allocate 4096 tokens.\n"
            "Available full tokens: 900000 (full_available_size=3000 + evictable=897000)\n",
            "not_oom",
        ),
        # ... and one that printed less room than the batch asked for is the pool full.
        (
            "RuntimeError: Prefill out of memory. Try to lower your batch size.\n"
            "Try to allocate 4096 tokens.\n"
            "Available full tokens: 1200 (full_available_size=1200 + evictable=0)\n",
            "cuda_oom",
        ),
        # One allocation over the runtime's cap, said so beside the error.
        (
            "hipMalloc returns hipErrorOutOfMemory for the 8 GiB buffer.\n"
            "The request exceeds the runtime's single-allocation cap of 4294959104 bytes.\n",
            "not_oom",
        ),
        # rocminfo failing on a GPU ROCm does not support.
        (
            "$ /opt/rocm/bin/rocminfo\n"
            "Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate "
            "the necessary resources.\n",
            "not_oom",
        ),
        # TensorRT's tactic notice glued to the state before it.
        (
            "[W] UNSUPPORTED_STATESkipping tactic 3 due to insufficient memory on requested "
            "size of 2147483648 detected for tactic 0x0000000000000003.\n",
            "not_oom",
        ),
        # The liveness probe told as failing beside the 137.
        ("The liveness probe fails with the app container.\nExit Code:    137\n", "not_oom"),
        # The shell's word glued to a progress bar counting examples.
        ("map:  65% 2207/3382 [03:08<01:16, 15.38 examples/s]Killed\n", "killed_unknown"),
        ("The tool crashes at stage two no error msg\n", "killed_unknown"),
    ],
)
def test_each_family_gives_its_class(text: str, expected: str) -> None:
    assert classify(text).cls == expected


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # OOMKilled considered and set aside, or defined: not a kill for memory.
        (
            "I thought about a potential `OOMKilled` issue, but the heap graphs stay low.\n"
            "Also `OOMKilled` is a SIGKILL, so no graceful shutdown would follow.\n",
            "host_oom_killed",
        ),
        # The reason beside a SIGTERM's exit status: a stale counter, not this container's end.
        (
            'state.terminated.reason = "OOMKilled"\nexitCode = 143\n',
            "host_oom_killed",
        ),
        # A crash whose dialog is missing, with its exit code 0.
        (
            "The server crashes without error dialogs, returning: Process exited with code: 0\n",
            "killed_unknown",
        ),
        # A feature request's template around OOM words.
        (
            "**Is your feature request related to a problem? Please describe.**\n"
            "Training has a mechanism to catch OOM errors on the GPU and retry smaller.\n",
            "cuda_oom",
        ),
        # A report and then an unrelated hedge after a dash: the hedge still counts.
        (
            "We also keep an OOM killer graph, that reports some kills - but we can't be "
            "sure those are from this pod\n",
            "host_oom_killed",
        ),
    ],
)
def test_lookalikes_are_not_read_as_the_family(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
