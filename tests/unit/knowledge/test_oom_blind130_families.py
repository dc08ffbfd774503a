"""The families of the hundred-and-thirtieth to hundred-and-thirty-third parts (Slurm and HPC;
serving on Kubernetes; GPU memory outside LLMs; reports in other languages), and two of the
hundred-and-twenty-ninth's (dead notebook kernels): each is read in its own words, and a
lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "Step 3 failed on a genuine CUDA OutOfMemoryError in the attention block.\n",
        "ERROR: Detected OutOfMemoryError! Enabling checkpointing to reduce memory usage\n",
        "Kokkos ERROR: HIP memory space failed to allocate\n",
        "Kokkos ERROR: Cuda memory space failed to allocate\n",
        "[bmlib_memory][error] bm_alloc_gmem failed, dev_id = 0, size = 0x400000\n",
    ],
)
def test_a_device_allocation_refused_in_its_own_words_is_the_cards(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        # Ray's memory monitor, named as its log names it.
        "Memory ran low and OOMKiller (Core component) killed the controller.\n",
        "Memory was completely used up and the job died after 3 hours.\n",
        # Colab's message in Korean and Japanese.
        "\uc0ac\uc6a9 \uac00\ub2a5\ud55c RAM\uc744 \ubaa8\ub450 \uc0ac\uc6a9\ud55c \ud6c4 "
        "\uc138\uc158\uc774 \ub2e4\uc6b4\ub418\uc5c8\uc2b5\ub2c8\ub2e4.\n",
        "\u4f7f\u7528\u53ef\u80fd\u306a RAM \u3092\u3059\u3079\u3066\u4f7f\u7528\u3057\u305f"
        "\u5f8c\u3067\u3001\u30bb\u30c3\u30b7\u30e7\u30f3\u304c\u30af\u30e9\u30c3\u30b7\u30e5"
        "\u3057\u307e\u3057\u305f\n",
    ],
)
def test_a_host_memory_failure_reported_or_told_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        # A kill, and the finding beside it.
        "Killed\nIt turned out to be due to OOM; raising the pod's limit fixed it.\n",
        # "It is a not-enough-memory problem, which got the process killed."
        "\u8fd9\u662f\u5185\u5b58\u4e0d\u591f\u7684\u95ee\u9898\uff0c\u5bfc\u81f4"
        "\u8fdb\u7a0b\u88ab\u6740\n",
    ],
)
def test_a_kill_found_to_be_memory_is_a_host_kill(text: str) -> None:
    verdict = classify(text)
    assert (verdict.cls, verdict.family) == ("host_oom_killed", "kill_found_to_be_memory")


def test_a_dead_kernel_cured_on_a_bigger_machine_is_a_host_kill() -> None:
    text = (
        'In the notebook I get "Kernel has died" on the first cell.\n'
        "It started to work on the machine with 128GB of memory.\n"
    )
    verdict = classify(text)
    assert (verdict.cls, verdict.family) == ("host_oom_killed", "kill_cured_by_more_memory")


@pytest.mark.parametrize(
    "text",
    [
        'In the notebook I get "Kernel has died" on the first cell.\n',
        "Studio notebooks always crash and restart when the processor loads.\n",
        "The app crashes and the console says \u2018Killed\u2019.\n",
        # "At epoch 14 the program (was) killed."
        "\u8bad\u7ec3\u523014\u4e2aepoch\u65f6\uff0c\u7a0b\u5e8fkilled\n",
    ],
)
def test_a_death_with_no_cause_shown_is_a_kill_of_unknown_cause(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


def test_paddles_shared_memory_map_failure_is_shm() -> None:
    text = "RuntimeError: (Unavailable) Memory map failed when create shared memory.\n"
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        # A reader's guess at another's kill is not the kernel's report.
        "exit code 247 is a kill -9. If you didn't kill it, it likely was killed by the OOM "
        "killer.\n",
        # "Such automatic kills are mostly down to too little memory" (a guess).
        "Killed\n\u8fd9\u79cd\u81ea\u52a8\u88abkill\u7684\u591a\u534a\u662f\u5185\u5b58"
        "\u4e0d\u591f\u5bfc\u81f4\u7684\n",
        # TorchServe names its worker dead for ordinary errors too.
        "Backend worker monitoring thread interrupted or backend worker process died.\n"
        "model_service_worker.py: error: unrecognized arguments: --sock-type unix\n",
    ],
)
def test_a_guess_or_an_ordinary_death_is_not_a_host_kill(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


def test_kokkos_out_of_host_memory_is_not_the_cards() -> None:
    text = "Kokkos ERROR: HostSpace memory space failed to allocate 8 GB\n"
    assert classify(text).cls != "cuda_oom"
