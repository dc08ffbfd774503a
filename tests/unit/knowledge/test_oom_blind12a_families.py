"""Part 12a's families: memory running out said in a sentence (a pod killed after running out of
memory, a GPU allocation that failed), pods and jobs refused before they ran (device admission,
quotas, admission webhooks, batch submission), and a bus error where hugepages are named. Each
is read, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "Our exporter pod runs out of memory every few hours and gets killed with exit code 137.\n",
        "the worker container ran out of memory during the merge and was killed by the runtime\n",
        "Each task process running out of memory is killed by the node agent.\n",
        "The job keeps running out of memory and exits with 137 after the third epoch.\n",
    ],
)
def test_a_pod_killed_after_running_out_of_memory_said_in_a_sentence_is_host_memory(
    text: str,
) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("host_oom_killed", "memory_kill_in_prose")
    assert triage.evidence
    assert triage.advice


@pytest.mark.parametrize(
    "text",
    [
        # the GPU is what ran out
        "the training process on GPU 0 runs out of memory and is killed by the launcher\n",
        "my CUDA process runs out of memory and gets killed\n",
        # a conditional, not an event
        "If the pod runs out of memory it will be killed and restarted by the kubelet.\n",
        # ran out of memory, no kill said
        "the pod runs out of memory sometimes but recovers on its own\n",
    ],
)
def test_lookalikes_of_a_memory_kill_in_prose_are_not_read_as_one(text: str) -> None:
    assert classify(text).family != "memory_kill_in_prose"


@pytest.mark.parametrize(
    "text",
    [
        "Every job scheduled on node gpu-07 fails to allocate GPU memory at start-up.\n",
        "RuntimeError: unable to allocate enough device memory for the embedding table\n",
        "I keep getting a CUDA error about failing to allocate memory on this node.\n",
        "worker 3: failed to allocate CUDA memory, retrying on another device\n",
    ],
)
def test_a_gpu_allocation_failure_said_in_words_is_gpu_memory(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("cuda_oom", "gpu_allocation_failed")
    assert triage.evidence
    assert triage.advice


@pytest.mark.parametrize(
    "text",
    [
        # pinned or host memory is not the GPU's
        "warning: failed to allocate GPU memory for pinned staging buffers\n",
        "failed to allocate device memory: host memory is exhausted\n",
        # refused for another CUDA error
        "failed to allocate GPU memory: an illegal memory access was encountered\n",
        "unable to allocate CUDA memory: invalid argument\n",
        # an allocator's own sized check is read by the request readers, not here
        "Check failed: ptr Fail to allocate GPU memory 2048 bytes\n",
    ],
)
def test_lookalikes_of_a_gpu_allocation_failure_in_words_are_not_read_as_one(text: str) -> None:
    assert classify(text).family != "gpu_allocation_failed"


@pytest.mark.parametrize(
    "text",
    [
        "  Warning  UnexpectedAdmissionError  12s  kubelet  Allocate failed due to rpc error: "
        "code = Unknown desc = no device found, which is unexpected\n",
        "Message: Pod Allocate failed due to requested number of devices unavailable for "
        "example.com/accel. Requested: 2, Available: 1, which is unexpected\n",
        'Error from server (Forbidden): error when creating "job.yaml": pods "train-0" is '
        "forbidden: exceeded quota: team-quota, requested: limits.memory=64Gi, used: "
        "limits.memory=200Gi, limited: limits.memory=256Gi\n",
        'pods "train-0" is forbidden: failed quota: team-quota: must specify limits.memory\n',
        'Error from server (Forbidden): admission webhook "policy.example.org" denied the '
        "request: container train has no memory limit\n",
        "qsub: submit error (Job exceeds queue resource limits MSG=cannot satisfy queue max mem "
        "requirement)\n",
    ],
)
def test_a_pod_or_job_refused_before_it_ran_is_not_a_memory_failure(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "admission_refused")
    assert triage.advice


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        # a pod that ran and was OOMKilled: the refusal of another pod does not explain it
        (
            'pods "other-1" is forbidden: exceeded quota: q, requested: limits.memory=1Gi\n'
            "    Last State:     Terminated\n      Reason:       OOMKilled\n"
            "      Exit Code:    137\n",
            "host_oom_killed",
        ),
        # RBAC's Forbidden is not a quota or an admission refusal
        (
            'Error from server (Forbidden): pods is forbidden: User "dev" cannot list resource '
            '"pods" in API group "" in the namespace "ml"\n',
            "not_oom",
        ),
    ],
)
def test_lookalikes_of_an_admission_refusal(text: str, cls: str) -> None:
    triage = classify(text)
    assert triage.cls == cls
    assert triage.family != "admission_refused"


def test_a_bus_error_beside_hugepages_is_not_dev_shm() -> None:
    text = (
        "creating configuration files ... ok\n"
        "running bootstrap script ... Bus error\n"
        "child process exited with exit code 135\n"
        "\n"
        "The node has vm.nr_hugepages set but the pod has no hugepages-2Mi limit.\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "hugepages_bus_error")
    assert triage.advice


@pytest.mark.parametrize(
    "text",
    [
        # a DataLoader bus error stays /dev/shm, even with hugepages named nearby
        "ERROR: Unexpected bus error encountered in worker. This might be caused by "
        "insufficient shared memory (shm).\nBus error (core dumped)\n",
        "DataLoader worker (pid 311) is killed by signal: Bus error.\n"
        "hugepages are disabled on this host\n",
    ],
)
def test_a_dataloader_bus_error_stays_shared_memory(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


def test_initdb_naming_its_shared_memory_setting_is_not_evidence_of_dev_shm() -> None:
    text = (
        "selecting dynamic shared memory implementation ... posix\n"
        "selecting default max_connections ... 100\n"
        "Bus error\n"
    )
    assert classify(text).cls != "shm_exhausted"
