"""The eleventh part's families: a worker's death seen by its supervisor, a SIGKILL told as a
reason in a sentence, a list of possible causes that names none, host memory refused by an
application's own check, a bus error beside "shm", and notices and scheduling failures that
hold memory words without a memory failure. Each is read, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        # Ray: an actor's or a task's worker that died, for no stated reason
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR\n",
        "(raylet) A worker died or was killed while executing a task by an unexpected system "
        "error. Worker PID: 4242\n",
        "Worker exit detail: Worker exits unexpectedly. Worker exits with an exit code None.\n",
        # Jupyter's restarter brings back a kernel that died
        "[I 2024-02-01 10:00:00.000 ServerApp] AsyncIOLoopKernelRestarter: restarting kernel "
        "(1/5), keep random ports\n",
        "Kernel Restarting\nThe kernel for train.ipynb appears to have died. It will restart "
        "automatically.\n",
    ],
)
def test_a_worker_death_seen_by_its_supervisor_is_killed_with_the_cause_unknown(
    text: str,
) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("killed_unknown", "worker_died_unknown")
    assert triage.evidence


@pytest.mark.parametrize(
    "text",
    [
        # the worker exited with a status of its own: an ordinary error, not a kill
        "Worker exit detail: Worker exits unexpectedly. Worker exits with an exit code 1.\n",
        # a restart someone asked for
        "[I 2024-02-01 10:00:00.000 ServerApp] Kernel restarted: 3f2a9c1e-0000-4000-8000\n",
    ],
)
def test_a_worker_that_exited_on_its_own_or_a_requested_restart_is_not_a_death(
    text: str,
) -> None:
    assert classify(text).cls != "killed_unknown"


def test_a_worker_death_beside_a_named_crash_is_that_crash() -> None:
    text = (
        "Fatal Python error: Segmentation fault\n"
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR\n"
    )
    assert (classify(text).cls, classify(text).family) == ("not_oom", "crash_signal")


def test_a_list_of_common_causes_names_no_oom_kill_and_no_crash() -> None:
    text = (
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR "
        "Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of "
        "file. Some common causes include: (1) the process was killed by the OOM killer due to "
        "high memory usage, (2) ray stop --force was called, or (3) the worker crashed "
        "unexpectedly due to SIGSEGV or another unexpected error.\n"
    )
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        # said as what happened, not as one of several guesses
        ("A process of this unit has been killed by the OOM killer.\n", "host_oom_killed"),
        ("worker 7: Segmentation fault (core dumped)\n", "not_oom"),
    ],
)
def test_a_cause_said_as_what_happened_is_still_read(text: str, cls: str) -> None:
    assert classify(text).cls == cls


@pytest.mark.parametrize(
    "text",
    [
        "my training container keeps exiting due to 137 after a few minutes\n",
        "the pod crashed because of exit code 137 again\n",
        "worker-2 died due to -9\n",
    ],
)
def test_sigkill_given_as_the_reason_in_a_sentence(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    "text",
    ["the job keeps exiting due to 1 failed check\n", "exited due to 1370 bad records\n"],
)
def test_another_status_given_as_the_reason_is_not_a_sigkill(text: str) -> None:
    assert classify(text).cls != "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        "Error: model requires more system memory (41.2 GiB) than is available (30.1 GiB)\n",
        'ResponseError: {"error":"model requires more system memory (5.3 GiB) than is '
        'available (4.4 GiB)"} (status code: 500)\n',
        "loader: this model needs more RAM than is available on the host\n",
    ],
)
def test_an_applications_check_that_host_memory_is_short(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "host_memory_precheck")


def test_the_same_check_for_the_gpus_memory_is_not_the_hosts() -> None:
    text = "Error: model requires more GPU memory (24.0 GiB) than is available (11.5 GiB)\n"
    assert classify(text).cls != "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "Bus error (core dumped)\nfixed by giving the container more shm (--ipc=host)\n",
        "训练时报 bus error\uff0cinsufficient shared memery (shm)\n",
    ],
)
def test_a_bus_error_beside_shm_named_on_its_own(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


def test_a_bus_error_beside_shmem_figures_is_not_dev_shm() -> None:
    text = (
        "Bus error (core dumped)\n"
        "Out of memory: Killed process 812 (python) total-vm:9120kB, anon-rss:812kB, "
        "file-rss:0kB, shmem-rss:0kB\n"
    )
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "2024-01-01 10:00:00.000: W tensorflow/core/framework/cpu_allocator_impl.cc:83] "
        "Allocation of 414988800 exceeds 10% of free system memory.\n",
        "2024-01-01 10:00:00.000: W tensorflow/core/common_runtime/bfc_allocator.cc:290] "
        "Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.17GiB with "
        "freed_by_count=0. The caller indicates that this is not a failure, but may mean that "
        "there could be performance gains if more memory were available.\n",
        "distributed.worker.memory - WARNING - Worker is at 86% memory usage. Pausing worker.  "
        "Process memory: 3.41 GiB -- Worker memory limit: 3.96 GiB\n",
        "distributed.worker.memory - WARNING - Unmanaged memory use is high. -- Unmanaged "
        "memory: 2.9 GiB -- Worker memory limit: 3.96 GiB\n",
    ],
)
def test_a_memory_notice_is_not_a_failure(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "memory_notice")
    assert triage.advice


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        # the notice, then the failure it warned of
        (
            "W bfc_allocator.cc:290] Allocator (GPU_0_bfc) ran out of memory trying to allocate "
            "1.17GiB with freed_by_count=0. The caller indicates that this is not a failure.\n"
            "ResourceExhaustedError: OOM when allocating tensor with shape[64,512,512] and type "
            "float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n",
            "cuda_oom",
        ),
        (
            "W cpu_allocator_impl.cc:83] Allocation of 414988800 exceeds 10% of free system "
            "memory.\nKilled\n",
            "killed_unknown",
        ),
        (
            "distributed.worker.memory - WARNING - Worker is at 86% memory usage. Pausing worker."
            "\ndistributed.nanny.memory - WARNING - Worker tcp://10.0.0.5:4242 (pid=77) exceeded "
            "95% memory budget. Restarting...\n",
            "host_oom_killed",
        ),
    ],
)
def test_a_failure_after_the_notice_is_read_first(text: str, cls: str) -> None:
    assert classify(text).cls == cls


@pytest.mark.parametrize(
    "text",
    [
        "  Warning  FailedScheduling  12s (x4 over 3m)  default-scheduler  0/4 nodes are "
        "available: 4 Insufficient memory. preemption: 0/4 nodes are available.\n",
        "0/3 nodes are available: 1 Insufficient memory, 2 Insufficient nvidia.com/gpu.\n",
        "sbatch: error: Memory specification can not be satisfied\n"
        "sbatch: error: Batch job submission failed: Requested node configuration is not "
        "available\n",
    ],
)
def test_work_that_could_not_be_placed_for_memory_never_ran(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "scheduling_failed")


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        # placed later, then killed for memory
        (
            "  Warning  FailedScheduling  2m  default-scheduler  0/4 nodes are available: 4 "
            "Insufficient memory.\n  Normal   Scheduled  1m  default-scheduler  Successfully "
            "assigned ml/train-0 to node-7\n    Last State:  Terminated\n      Reason:  OOMKilled\n"
            "      Exit Code:  137\n",
            "host_oom_killed",
        ),
        # a framework's own "insufficient memory", not a scheduler's
        ("RuntimeError: Insufficient memory to allocate the KV cache on the host\n", "not_oom"),
    ],
)
def test_a_scheduling_lookalike_is_read_for_what_it_is(text: str, cls: str) -> None:
    triage = classify(text)
    assert triage.family != "scheduling_failed"
    if cls != "not_oom":
        assert triage.cls == cls
