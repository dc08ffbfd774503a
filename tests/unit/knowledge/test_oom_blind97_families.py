"""The families of the ninety-seventh to hundredth parts (host kills in data engineering and
notebooks; GPU memory outside PyTorch's message; deaths as schedulers report them; shared
memory and silent deaths): each is read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        # What ended it, named.
        "Benchmark: ClickHouse failed with OOM killer on the small instance.\n",
        "samtools sort killed, cgroup out-of-memory handler\n",
        "llama runner OOM: Killed process\n",
        # The memory limit reached, and what followed.
        "When the scheduler exceeds its memory limit, it hits an Out-Of-Memory error and "
        "restarts.\n",
        "when reaching the memory limit, the whole notebook server dies\n",
        "The session was killed by the culler because it was out of memory.\n",
        "Loading the full index triggers OOM kills on the 8 GB nodes.\n",
        "A step that produces a container OOM error is not retried.\n",
        "Support said it was due to the instance running low on RAM.\n",
        "The export container has been failing on out of memory since Monday.\n",
        "While reading the shards my process is killed due to insufficient memory.\n",
        "After using up 2 GB of memory on the hub, the kernel fails.\n",
        "host memory exceeded during preprocessing\n",
        "The memory of the server rises quickly and then out of memory.\n",
        # numpy's older wording of a refused array.
        "Unable to allocate array with shape (120000, 4096) and data type float64\n",
    ],
)
def test_a_host_kill_told_by_its_cause_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        # Beside a worker's death: the finding in Chinese, the container's limit raised.
        "RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly\n"
        "\u662f\u6570\u636e\u592a\u5927\u5185\u5b58\u4e0d\u8db3\u5bfc\u81f4\u7684\n",
        "RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly\nThe cause was the "
        "docker memory limitation, I increased it and the problem is solved.\n",
        # Beside a kill: the data too big to load, the message it left, a cap set against it.
        "The process was killed.\nThe corpus is too large to load into memory at once.\n",
        "The system kills the process, with the message out of memory.\n",
        "Exited with code 137.\nCap the cache to prevent OOM kills in small containers.\n",
    ],
)
def test_a_death_beside_a_memory_finding_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: Insufficient VRAM for model and cache\n",
        "RuntimeError: Not enough memory, use lower resolution (max approx. 1280x1280). "
        "Need: 9.0GB free, Have:3.1GB free\n",
        "The new loader OOMs on a 24GB GPU during quantization.\n",
        "The adapter loads twice, which causes CUDA OOM at start-up.\n",
        "On cards smaller than 40 GiB the encoder does not fit and the server OOMs.\n",
    ],
)
def test_the_cards_memory_in_a_loaders_or_reporters_words_is_a_gpu_oom(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "WARN Lost executor 7 on worker-3: Remote RPC client disassociated. Likely due to "
        "containers exceeding thresholds, or network issues.\n",
        "The server process killed without error message after the second prompt.\n",
        "Exit code `137` is nearly always an out of memory error.\n",
    ],
)
def test_a_death_whose_cause_is_not_shown_is_killed_unknown(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


def test_a_small_shm_told_with_what_it_broke_is_shared_memory() -> None:
    text = (
        "Inside the container /dev/shm defaults to 64 MB. That is not enough space for the "
        "workers' arrays.\n"
    )
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        # DuckDB at its own memory_limit, raised and survived.
        "Out of Memory Error: failed to pin block of size 262144\n",
        # Triton's fixed pool full, served from pinned host memory: a warning.
        "W0101 memory.cc:212] Failed to allocate CUDA memory with byte size 1048576 on GPU 0: "
        "CNMEM_STATUS_OUT_OF_MEMORY, falling back to pinned system memory\n",
        # mount(2) refusing a fresh /dev/shm: the host's mount table, not a full tmpfs.
        'container init caused "rootfs_linux.go:57: mounting \\"/dev/shm\\" to rootfs '
        '\\"/var/lib/docker/overlay2/abc/merged\\" caused \\"no space left on device\\""\n',
    ],
)
def test_memory_lookalikes_are_not_an_oom(text: str) -> None:
    assert classify(text).cls == "not_oom"


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # A runtime's list of common causes names no cause.
        (
            "Worker unexpectedly exits. Some common causes include: (1) the process was "
            "killed by the OOM killer due to high memory usage, (2) ray stop --force.\n",
            "host_oom_killed",
        ),
        # A pod refused at admission for its request failed, but nothing was killed.
        ("Handle pod failed with out of memory error correctly.\n", "host_oom_killed"),
        # A condition is not a report.
        (
            "If the worker exceeds its memory limit, it restarts.\n",
            "host_oom_killed",
        ),
        # The card's memory in the sentence is not the host's.
        (
            "The job was killed due to insufficient GPU memory on the small card.\n",
            "host_oom_killed",
        ),
    ],
)
def test_lookalikes_are_not_read_as_the_family(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
