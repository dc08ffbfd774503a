"""The families of the eighty-seventh and eighty-eighth parts (reinforcement learning and
robotics; general training frameworks): each is read in its own words, and a lookalike beside
it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        # The host's memory seen filling beside a kill, a GPU named only as a spec.
        "Loading the frames, RAM and swap go to 100% and then it just prints Killed.\n",
        "On my RTX 3090 box the memory consumption keeps on increasing and after 5k steps the OS "
        "kills the process.\n",
        "By step 30k it took up 14GB of memory, and then the program was killed.\n",
        "The memory is occupied by almost 58GB after 2M steps, and the training process is "
        "killed.\n",
        "There is such a memory leak that it will be killed by the system after a few hours.\n",
        "the usage of CPU memory become more and more until the DataLoader worker (pid 311) is "
        "killed by signal: Killed\n",
        # Told of the host, whatever the card did.
        "The host RAM usage keeps growing until it reaches 31 GiB (100 %), while GPU memory "
        "stays flat.\n",
        "The simulator used all of my machine's DRAM (about 64GB) and crashed.\n",
        "After 12 saves we were hitting an OOM, with 256G of host RAM.\n",
        # Chinese: the swap squeezed until the system killed it; memory used up, then it exited.
        "\u6324\u538b\u4ea4\u6362\u7a7a\u95f4\u5e76\u6700\u7ec8\u6ea2\u51fa\uff0c\u7cfb\u7edf"
        "\u81ea\u52a8\u6740\u6b7b\u4e86\u8be5\u8fdb\u7a0b\n",
        "\u5185\u5b58\u8017\u5b8c\u540e\u9000\u51fa\u4e86\n",
        # MuJoCo's buffers refused.
        "mujoco.FatalError: Could not allocate memory\n",
    ],
)
def test_host_memory_in_these_words_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: CUDA out of the memory. Tried to allocate 512.00 MiB\n",
        "GPU memory usage steadily increases over 300 iterations until the training crashes.\n",
    ],
)
def test_the_cards_memory_in_these_words_is_a_cuda_oom(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: DataLoader worker (pid(s) 31) exited unexpectedly\n**Solution:**\nAdding "
        '`--shm-size="16g"` to the docker run command.\n',
        "This fixes an error with several GPUs in a container: it increases the shared memory "
        "given to the container to 2 GB.\n",
    ],
)
def test_shared_memory_cured_in_these_words_is_shm(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    ("text", "family"),
    [
        (
            "mujoco.FatalError: mj_stackAlloc: out of memory, stack overflow at mj_collision\n"
            "  max = 16777216, available = 16777192, requested = 19288260\n",
            "application_memory_cap",
        ),
        (
            "Exhausted heap space, trying to allocate 240 bytes.\n"
            "runtime/vm/object.cc: 2803: error: Out of memory.\n",
            "java_heap",
        ),
    ],
)
def test_a_programs_own_arena_or_heap_is_not_the_hosts_memory(text: str, family: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", family)


def test_a_data_loader_worker_killed_in_prose_is_a_kill() -> None:
    text = "It always has the data loader worker killed after running for a while.\n"
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # The card's memory filling beside the kill is not the host's.
        ("Killed\nGPU memory goes to 100% before that.\n", "host_oom_killed"),
        # A guess in the same sentence; a question.
        ("Killed\nMaybe the RAM keeps growing until it dies.\n", "host_oom_killed"),
        ("Is the host RAM usage reaching 100% the reason?\n", "host_oom_killed"),
        # A bus error is a crash signal's report, not a kill in prose.
        ("RuntimeError: DataLoader worker is killed by signal: Bus error\n", "killed_unknown"),
        # Chinese: a shortage asked as a question beside the kill.
        ("Killed\n\u5185\u5b58\u4e0d\u8db3 \uff1f\n", "host_oom_killed"),
    ],
)
def test_lookalikes_are_not_read_as_these_families(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
