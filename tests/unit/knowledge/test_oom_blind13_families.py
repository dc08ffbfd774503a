"""The thirteenth part's families: an inference server's KV cache left no GPU memory, the
allocator's message cut to its last sentence, torch's shared-memory file named short, ENOSPC
beside shared memory named in words or from a data loader, and a container's memory set low
to bring on the kill beside exit code 137. Each is read, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "ValueError: Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=0.80.\n",
        "RuntimeError: no memory left for the KV cache after loading the model (avail 1.2 GB)\n",
        "error: weights leave no device memory for the KV cache; lower the TP size\n",
    ],
)
def test_a_kv_cache_left_no_gpu_memory_is_a_gpu_oom(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("cuda_oom", "inference_kv_cache")


@pytest.mark.parametrize(
    "text",
    [
        "INFO: KV cache uses 30.2 GB of GPU memory; 12000 tokens fit\n",
        "the KV cache is stored in GPU memory and grows with the batch\n",
    ],
)
def test_the_kv_cache_said_in_passing_is_not_an_oom(text: str) -> None:
    assert classify(text).cls != "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "llocated memory try setting max_split_size_mb to avoid fragmentation.  See "
        "documentation for Memory Management\n",
        "If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n",
    ],
)
def test_the_allocator_messages_last_sentence_alone_is_a_gpu_oom(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "cuda_oom"
    assert triage.confidence == "medium"


@pytest.mark.parametrize(
    "text",
    [
        "export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128\npython train.py\n",
        "Tip: set max_split_size_mb in your config to reduce fragmentation.\n",
    ],
)
def test_the_allocator_setting_on_its_own_is_not_an_oom(text: str) -> None:
    assert classify(text).cls == "not_oom"


def test_torchs_shared_memory_file_named_short_is_shm() -> None:
    triage = classify("RuntimeError: unable to write to file </torch>.....\n")
    assert triage.cls == "shm_exhausted"


def test_another_programs_file_that_could_not_be_written_is_not_shm() -> None:
    assert classify("error: unable to write to file </torchvision-log.txt>\n").cls != (
        "shm_exhausted"
    )


@pytest.mark.parametrize(
    "text",
    [
        "During the run the 'No space left on device' error occured because of a missing "
        "shared memory mount\n",
        "OSError: [Errno 28] No space left on device\n(the container has no SHM volume)\n",
        "'No space left on device' when iterating over the DataLoader object\n",
        "ENOSPC raised by a worker with num_workers=8\n",
    ],
)
def test_enospc_beside_shared_memory_or_a_data_loader_is_shm(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "shm_exhausted"
    assert triage.confidence == "medium"


@pytest.mark.parametrize(
    "text",
    [
        # the failed write names a file on a disk
        "DataLoader done; saving\nOSError: [Errno 28] No space left on device: "
        "'/data/ckpt/epoch3.pt'\n",
        # a checkpoint write, whatever the loader does
        "torch.save(model, path) failed: No space left on device (DataLoader still running)\n",
        # a package install
        "pip install failed: No space left on device (shared memory is fine)\n",
    ],
)
def test_enospc_of_a_disk_write_beside_those_words_is_not_shm(text: str) -> None:
    assert classify(text).cls != "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        "Reducing the memory to 500Mi reproduces the OOM error.\n\nlastState:\n  terminated:\n"
        "    exitCode: 137\n",
        "We can hit the OOM every time by setting the memory limit to 256Mi;\n"
        "the container exited with code 137.\n",
    ],
)
def test_a_container_memory_set_low_to_bring_on_the_oom_beside_137_is_host_memory(
    text: str,
) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "memory_kill_in_prose")


@pytest.mark.parametrize(
    "text",
    [
        # no kill: the same sentence alone
        "Reducing the memory to 500Mi reproduces the OOM error.\n",
        # the GPU is what ran out
        "Setting the memory to 8Gi still gives a CUDA OOM on GPU 0.\nexit code 137\n",
    ],
)
def test_that_sentence_without_a_kill_or_about_the_gpu_is_not_a_host_kill(text: str) -> None:
    assert classify(text).family != "memory_kill_in_prose"
