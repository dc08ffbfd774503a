"""The fourteenth part's families: XLA's BufferAssignment OOM report, the shell's `Killed`
quoted in a sentence, a memory-shortage kill said in Japanese, Chinese or Korean, a kill that
more container memory cured, a segfault in NCCL's ncclShmOpen, and OOMKilled only as the title
of a linked article. Each is read, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


def test_xlas_buffer_assignment_oom_report_is_a_gpu_oom() -> None:
    text = (
        "Out of memory while trying to allocate 1048576 bytes.\n"
        "BufferAssignment OOM Debugging.\nBufferAssignment stats:\n"
        "             parameter allocation:  512.00MiB\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.confidence) == ("cuda_oom", "medium")


def test_xlas_report_for_the_cpu_is_not_the_gpus() -> None:
    text = (
        "BufferAssignment OOM Debugging. /device:CPU:0\n"
        "MemoryError: Unable to allocate 3.00 GiB for an array\n"
    )
    assert classify(text).cls != "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        'After an hour the terminal just shows _"Killed"_ and nothing else.\n',
        'The training script keeps ending with "Killed".\n',
        "python prints `Killed` and exits.\n",
    ],
)
def test_the_shells_killed_quoted_in_a_sentence_is_a_kill_of_unknown_cause(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("killed_unknown", "sigkill_cause_unknown")


@pytest.mark.parametrize(
    "text",
    [
        'The UI shows "killed" in grey for tasks I stopped myself.\n',  # lower case: a state
        "The game shows Killed by a zombie.\n",
    ],
)
def test_killed_as_another_word_is_not_a_kill(text: str) -> None:
    assert classify(text).cls != "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        "大きなモデルを読むとOSがメモリ不足を検知してkillされます\n",
        "训练到一半内存不足被系统杀死了\n",
        "메모리 부족으로 프로세스가 kill 됩니다\n",
    ],
)
def test_a_memory_shortage_kill_in_another_language_is_host_memory(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "memory_kill_in_prose")


@pytest.mark.parametrize(
    "text",
    [
        "显存不足进程被杀死\n",  # the GPU's memory
        "GPUのメモリ不足でkillされた\n",
    ],
)
def test_the_gpus_memory_shortage_in_another_language_is_not_host_memory(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


def test_a_kill_that_more_container_memory_cured_is_host_memory() -> None:
    text = (
        "It just gets killed after 20 iterations.\n"
        'Solved this killed problem by adding --memory="16g" to the docker run command.\n'
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "memory_kill_in_prose")


def test_a_memory_flag_without_a_cured_kill_is_not_a_host_kill() -> None:
    text = 'docker run --memory="16g" trainer:1\nTraceback: ValueError: bad shape\n'
    assert classify(text).family != "memory_kill_in_prose"


def test_a_segfault_in_ncclshmopen_is_shared_memory() -> None:
    text = "Without a bigger shmem the tutorial would segfault in `ncclShmOpen` at init.\n"
    triage = classify(text)
    assert (triage.cls, triage.confidence) == ("shm_exhausted", "medium")


def test_a_missing_ncclshmopen_segment_is_not_a_full_dev_shm() -> None:
    text = "segfault in ncclShmOpen: No such file or directory\n"
    assert classify(text).cls != "shm_exhausted"


def test_oomkilled_only_as_a_linked_articles_title_is_not_the_kubelets_word() -> None:
    text = (
        "CI failed with the exit code 137 ([OOMKilled Kubernetes Error]"
        "(https://example.com/oomkilled-exit-code-137)). Maybe raise the limit.\n"
    )
    triage = classify(text)
    assert triage.cls == "killed_unknown"


def test_oomkilled_as_a_pods_reason_is_still_read() -> None:
    text = "    Last State:  Terminated\n      Reason:  OOMKilled\n      Exit Code:  137\n"
    assert classify(text).cls == "host_oom_killed"
