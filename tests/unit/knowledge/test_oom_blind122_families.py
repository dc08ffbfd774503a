"""The families of the hundred-and-twenty-second to hundred-and-twenty-fifth parts (GPUs other
than NVIDIA's; JAX and TPUs; data engineering; LLM inference servers): each is read in its own
words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        # macOS's kernel killing for memory (jetsam's memorystatus line).
        "kernel: memorystatus: killing largest compressed process ffmpeg [811] 20114 MB\n",
        # The kubelet's eviction, told by its owner.
        "The workers kept getting evicted because of exceeding the requested memory.\n",
        # The kubelet's OOMKilled seen as the pod's status beside its restarts.
        "pod/ingest-7d9 1/1 CrashLoopBackOff 40 3h\n"
        "Twice I saw it was in OOM status before the crash, maybe a leak somewhere.\n",
        # A memory limit set too low, and the out-of-memory that followed.
        "With the container's memory limit too low the out-of-memory error is never shown.\n",
    ],
)
def test_a_host_kill_reported_or_told_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "Killed\nThe SIGKILL was due to an out-of-memory on the login node.\n",
        "exited with return code -9\nturns out it's a memory issue, we raised the pod limits\n",
        "Killed\nMy jobs run out of memory (reaching 100% of system memory) before step one.\n",
    ],
)
def test_a_kill_found_to_be_memory_is_a_host_kill(text: str) -> None:
    verdict = classify(text)
    assert (verdict.cls, verdict.family) == ("host_oom_killed", "kill_found_to_be_memory")


def test_a_kill_found_to_be_memory_on_the_card_is_not_the_hosts() -> None:
    text = "Killed\nThe SIGKILL was due to an OOM on the GPU, VRAM was full.\n"
    assert classify(text).cls != "host_oom_killed"


def test_ggml_vulkan_device_allocation_failure_is_the_cards() -> None:
    text = "ggml_vulkan: Device memory allocation of size 8589934592 failed.\n"
    verdict = classify(text)
    assert (verdict.cls, verdict.confidence) == ("cuda_oom", "high")


def test_a_shard_ended_by_signal_7_with_nothing_of_shm_is_a_kill_of_unknown_cause() -> None:
    text = "ERROR shard-manager: Shard process was signaled to shutdown with signal 7 rank=3\n"
    assert classify(text).cls == "killed_unknown"


def test_a_shard_ended_by_signal_7_beside_shm_is_shm() -> None:
    text = (
        "ERROR shard-manager: Shard process was signaled to shutdown with signal 7 rank=3\n"
        "The container runs with the default 64M /dev/shm.\n"
    )
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    ("text", "family"),
    [
        (
            "status = StatusCode.RESOURCE_EXHAUSTED\n"
            'details = "Received message larger than max (8388608 vs. 4194304)"\n',
            "grpc_message_size",
        ),
        (
            "Query 20250101_0001 failed: CLUSTER_OUT_OF_MEMORY: Query killed because the cluster "
            "is out of memory. Please try again in a few minutes.\n",
            "application_memory_cap",
        ),
        (
            "W1102 pinned_memory_manager.cc:170] failed to allocate pinned system memory: no "
            "pinned memory pool, falling back to non-pinned system memory\n",
            "application_memory_cap",
        ),
        (
            "The worker catches every Throwable, OutOfMemoryError included, and keeps going.\n"
            "See StreamingWorker.java for where the JVM should halt instead.\n",
            "java_heap",
        ),
        (
            "Allocating on the second card fails with a false OOM even though 22.5 GiB free is "
            "reported by the driver.\n",
            "false_oom_report",
        ),
    ],
)
def test_lookalikes_are_not_out_of_memory(text: str, family: str) -> None:
    verdict = classify(text)
    assert (verdict.cls, verdict.family) == ("not_oom", family)


def test_a_false_oom_without_the_free_memory_shown_is_not_called_false() -> None:
    text = "torch.OutOfMemoryError: CUDA out of memory.\nIs this a false OOM?\n"
    assert classify(text).cls == "cuda_oom"


def test_pytorchs_out_of_memory_error_is_not_the_jvms() -> None:
    text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert classify(text).family != "java_heap"


def test_a_segfault_told_as_what_could_happen_is_not_a_crash() -> None:
    text = "A segmentation fault can produce a 50GB core dump on the node's boot disk.\n"
    assert classify(text).family != "crash_signal"


def test_a_segfault_that_happened_is_still_a_crash() -> None:
    text = "Fatal Python error: Segmentation fault\n"
    assert classify(text).family == "crash_signal"


@pytest.mark.parametrize(
    "text",
    [
        # "Models sharing a card easily fail to start or OOM in inference."
        "多模型同卡时\uff0c显存占用会动态变化\uff0c容易启动失败或推理 OOM。\n",
        # "The KV cache's VRAM may be insufficient, so inference may fail."
        "推理阶段可能因为显存不足导致推理失败\n",
    ],
)
def test_a_risk_told_in_chinese_is_not_a_gpu_oom(text: str) -> None:
    assert classify(text).cls != "cuda_oom"


def test_a_gpu_oom_reported_in_chinese_is_still_the_cards() -> None:
    assert classify("推理时报错 OOM\uff0c显存不足\n").cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "[Feature] Cap the cache's memory\n\n"
        "**Is your feature request related to a problem? Please describe.**\n"
        "Bound the cache so there is no possibility of OOM on small nodes.\n",
        "### 🚀 The feature, motivation and pitch\n\n"
        "Load each shard on its own host to prevent host memory OOM for 1T models.\n",
        "### Desired use case or feature\n\n"
        "Pick the largest context that fits, to avoid OOM errors at start-up.\n",
    ],
)
def test_a_proposal_naming_oom_only_as_a_risk_is_not_an_oom(text: str) -> None:
    verdict = classify(text)
    assert (verdict.cls, verdict.family, verdict.confidence) == (
        "not_oom",
        "oom_named_as_a_risk",
        "low",
    )


@pytest.mark.parametrize(
    "text",
    [
        # The tag is not a hedge: the title reports an OOM that occurs.
        "[Feature] Out of memory (OOM) error occurs on the Orin during inference.\n"
        "Maybe the driver caps cudaMallocAsync?\n",
        # Its writer's own runs: an experience, not only a proposal.
        "## Is your feature request related to a problem?\n"
        "My system has 16GB of RAM; if you pick the large model it runs out of memory.\n",
        # Not a proposal at all: a question about a risk stays unexplained.
        "Could the new loader avoid OOM on 8GB cards?\n",
    ],
)
def test_a_reported_or_experienced_oom_is_never_called_a_risk(text: str) -> None:
    assert classify(text).family != "oom_named_as_a_risk"


@pytest.mark.parametrize(
    "text",
    [
        "Killed\n8GB of RAM is not enough for this pipeline. I moved to a 16GB instance.\n",
        "exit status 137\nThe issue was that we were running our of RAM; fewer tasks fixed it.\n",
        # "The CPU's memory (128G) was full."
        "exits with return code = -9\nCPU\u5185\u5b58\uff08128G\uff09\u5360\u6ee1\n",
    ],
)
def test_a_kill_beside_the_hosts_memory_found_short_is_a_host_kill(text: str) -> None:
    verdict = classify(text)
    assert (verdict.cls, verdict.family) == ("host_oom_killed", "kill_found_to_be_memory")


@pytest.mark.parametrize(
    "text",
    [
        # A guess is not a finding.
        "Killed\nLooks like 1gb of ram is not enough to build the app.\n",
        # The card's memory full is not the host's.
        "exits with return code = -9\n\u663e\u5b58\uff0880G\uff09\u5360\u6ee1\n",
    ],
)
def test_a_guess_or_the_cards_memory_beside_a_kill_is_not_a_host_kill(text: str) -> None:
    assert classify(text).cls != "host_oom_killed"
