"""The families of the thirty-seventh part (batch, notebook and CI platforms) and the
thirty-eighth (inference and fine-tuning stacks, container runtimes): each is read in its
own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize("volume", ["dshm", "shm", "dev-shm", "cache-shm"])
def test_an_emptydir_for_dev_shm_over_its_limit_is_shared_memory(volume: str) -> None:
    text = (
        "Status:  Failed\nReason:  Evicted\n"
        f'Message: Usage of EmptyDir volume "{volume}" exceeds the limit "2Gi".\n'
    )
    triage = classify(text, exit_code=137)
    assert (triage.cls, triage.family) == ("shm_exhausted", "emptydir_shm_over_limit")


def test_another_emptydir_over_its_limit_stays_a_storage_eviction() -> None:
    text = 'Message: Usage of EmptyDir volume "scratch" exceeds the limit "10Gi".\n'
    triage = classify(text, exit_code=137)
    assert (triage.cls, triage.family) == ("not_oom", "ephemeral_storage_eviction")


@pytest.mark.parametrize(
    "line",
    [
        "[launch.py:319:sigkill_handler] ['python', 'train.py'] exits with return code = -7",
        "  exitcode  : -7 (pid: 4711)",
    ],
)
def test_a_launchers_sigbus_beside_shm_words_is_shared_memory(line: str) -> None:
    text = f"{line}\nThe container's /dev/shm is the default 64M; --shm-size=8g fixed it.\n"
    assert classify(text).cls == "shm_exhausted"


def test_a_launchers_sigbus_with_no_shm_words_is_not_shared_memory() -> None:
    text = "[launch.py:319:sigkill_handler] ['python', 'train.py'] exits with return code = -7\n"
    assert classify(text).cls != "shm_exhausted"


def test_a_launchers_teardown_after_an_nccl_timeout_is_the_timeout() -> None:
    text = (
        "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, "
        "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600123 milliseconds before timing out.\n"
        "[INFO] [launch.py:316:sigkill_handler] Killing subprocess 1201\n"
        "[INFO] [launch.py:316:sigkill_handler] Killing subprocess 1202\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "nccl_timeout")


def test_a_launchers_teardown_with_nothing_before_it_stays_a_kill_of_unknown_cause() -> None:
    text = "[INFO] [launch.py:316:sigkill_handler] Killing subprocess 1201\n"
    assert classify(text).cls == "killed_unknown"


def test_a_teardown_beside_a_shell_killed_is_not_explained_by_the_timeout() -> None:
    """The shell's own Killed is a kill the launcher did not send."""
    text = (
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9) ran for 600123 "
        "milliseconds before timing out.\n"
        "[INFO] [launch.py:316:sigkill_handler] Killing subprocess 1201\n"
        "Killed\n"
    )
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        "启动后会被系统OOM杀进程\uff0c换了参数也一样\n",
        "训练到一半就被OOM killer杀掉了\n",
        "加载模型时OOM杀死了进程\n",
    ],
)
def test_the_oom_killer_named_in_chinese_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_the_gpus_memory_beside_it_is_not_the_hosts() -> None:
    assert classify("显存不够\uff0c被OOM杀掉了\n").cls != "host_oom_killed"


def test_a_quoted_lower_case_killed_with_a_memory_cure_is_a_host_kill() -> None:
    text = (
        "The script stops at `Loading weights: 40%` with message `killed`.\n"
        "Increasing memory to 64 GB solved the issue.\n"
    )
    assert classify(text).cls == "host_oom_killed"


def test_a_cure_that_did_not_work_is_no_cure() -> None:
    text = (
        "The script stops at `Loading weights: 40%` with message `killed`.\n"
        "Increasing memory to 64 GB did not solve the issue.\n"
    )
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    "line",
    [
        "kernel: CODE SIGNING: cs_invalid_page(0x1000f4000): p=812[tool] final status "
        "0x23020200, denying page sending SIGKILL",
        "CODE SIGNING: process 812[tool]: rejecting invalid page at address 0x1000f4000",
        "Termination Reason:    Namespace CODESIGNING, Code 2 Invalid Page",
    ],
)
def test_macos_killing_a_binary_for_its_code_signature_is_not_memory(line: str) -> None:
    triage = classify(f"$ ./target/debug/tool\nKilled: 9\n{line}\n")
    assert (triage.cls, triage.family) == ("not_oom", "code_signing_kill")


def test_a_killed_9_with_no_signature_words_stays_a_kill_of_unknown_cause() -> None:
    assert classify("$ ./target/debug/tool\nKilled: 9\n").cls == "killed_unknown"


@pytest.mark.parametrize(
    "line",
    [
        "tests/test_big.py::test_load make: *** [Makefile:40: pytest] Killed",
        "make[2]: *** [CMakeFiles/app.dir/build.make:76: app.o] Error 137",
        "The pod keeps getting terminated by something with a reason code of 137.",
        "Indeed all tasks return a `137` error status.",
    ],
)
def test_a_kill_in_these_words_is_a_sigkill(line: str) -> None:
    assert classify(line + "\n").cls == "killed_unknown"


def test_make_reporting_an_ordinary_error_is_not_a_kill() -> None:
    assert classify("make: *** [Makefile:40: pytest] Error 2\n").cls != "killed_unknown"


def test_a_kill_found_afterwards_to_be_memory_is_a_host_kill() -> None:
    text = "All tasks exit with status 137.\nTurns out it was just a memory problem.\n"
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "kill_found_to_be_memory")


@pytest.mark.parametrize(
    "text",
    [
        "Turns out it was just a memory problem.\n",  # no kill beside it
        "All tasks exit with status 137.\nTurns out it was just a GPU memory problem.\n",
    ],
)
def test_no_kill_or_the_cards_memory_is_not_a_kill_found_to_be_memory(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "line",
    [
        "That message is what anything killing the agent gives; here it's an out-of-memory "
        "kill, not a network problem.",
        "Notebook error came from data loading. Binder instance ran out of memory.",
        "The runner VM ran out of memory during the link step.",
    ],
)
def test_a_host_kill_told_in_a_sentence(line: str) -> None:
    assert classify(line + "\n").cls == "host_oom_killed"


@pytest.mark.parametrize(
    "line",
    [
        "If the instance ran out of memory, the kernel would restart.",
        "Maybe the machine ran out of memory?",
        "The GPU instance ran out of memory on the second batch.",
        "It's not an OOM kill: the probe failed.",
    ],
)
def test_a_guess_a_condition_or_the_card_is_not_a_host_kill(line: str) -> None:
    assert classify(line + "\n").cls != "host_oom_killed"


@pytest.mark.parametrize(
    "line",
    [
        "The spark driver has stopped unexpectedly and is restarting. Your notebook will be "
        "automatically reattached.",
        "distributed.scheduler.KilledWorker: Attempted to run task ('read-parquet', 3) on 4 "
        "different workers, but all those workers died while running it.",
    ],
)
def test_a_platform_reporting_its_worker_dead_names_no_cause(line: str) -> None:
    triage = classify(line + "\n")
    assert (triage.cls, triage.family) == ("killed_unknown", "worker_died_unknown")


def test_a_dask_memory_budget_beside_a_killed_worker_is_host_memory() -> None:
    text = (
        "distributed.nanny.memory - WARNING - Worker tcp://127.0.0.1:4021 (pid=77) exceeded "
        "95% memory budget. Restarting...\n"
        "distributed.scheduler.KilledWorker: Attempted to run task ('x', 0) on 3 different "
        "workers, but all those workers died while running it.\n"
    )
    assert classify(text).cls == "host_oom_killed"
