"""The families of the hundred-and-twenty-sixth to hundred-and-twenty-ninth parts (Kubernetes
kills and evictions; large-model training; shared memory; desktop apps and notebooks): each is
read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        # The host ran out first, the card named only as what did not.
        "ZeRO-3 on 8 cards. Out of CPU memory before it runs out of GPU memory.\n",
        "Saving the optimizer state copies it whole to each rank (which leads to CPU OOM here).\n",
        "Past step 4000 the trainer consumes all system memory and stops.\n",
        # The kernel's OOM named as what was triggered.
        "The task dies right after start; the agent logs nothing and kernel OOM is  triggered.\n",
        # The kubelet's eviction for the node's memory, told.
        "Two deployments were evicted and rescheduled because of node: low memory.\n",
    ],
)
def test_a_host_memory_failure_told_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "My box has 64GB and the memory overflowed while loading, and it was killed -9.\n",
    ],
)
def test_a_kill_beside_the_hosts_memory_found_short_is_a_host_kill(text: str) -> None:
    verdict = classify(text)
    assert (verdict.cls, verdict.family) == ("host_oom_killed", "kill_found_to_be_memory")


def test_a_kill_cured_by_more_memory_told_in_chinese_is_a_host_kill() -> None:
    # "Expanded the memory to 256G and the 4-card run succeeded."
    text = (
        "exitcode: -9\n\u628a\u5185\u5b58\u6269\u5927\u5230 256G\uff0c"
        "\u8dd14\u5361\u5fae\u8c03\u6210\u529f\u4e86\n"
    )
    verdict = classify(text)
    assert (verdict.cls, verdict.family) == ("host_oom_killed", "kill_cured_by_more_memory")


def test_killed_with_the_signals_number_after_it_is_a_kill() -> None:
    assert classify("The converter ran for an hour and it was killed -9.\n").cls == (
        "killed_unknown"
    )


def test_the_cards_memory_expanded_beside_a_kill_is_not_the_hosts() -> None:
    # "Expanded the video memory to 80G and it succeeded."
    text = "exitcode: -9\n\u663e\u5b58\u6269\u5927\u5230 80G\u6210\u529f\u4e86\n"
    assert classify(text).cls != "host_oom_killed"


def test_a_ucx_bus_error_with_nothing_of_nccl_is_a_death_of_unknown_cause() -> None:
    text = "[a1b2:17033:0:19491] Caught signal 7 (Bus error: nonexistent physical address)\n"
    assert classify(text).cls == "killed_unknown"


def test_a_bus_error_inside_nccl_is_still_shared_memory() -> None:
    text = (
        "[a1b2:17033:0:19491] Caught signal 7 (Bus error: nonexistent physical address)\n"
        "==== backtrace ====\n"
        " 0  /usr/lib/x86_64-linux-gnu/libnccl.so.2(+0x5b2f0) [0x7f]\n"
    )
    assert classify(text).cls == "shm_exhausted"


def test_postgresqls_segment_resize_named_alone_is_shared_memory() -> None:
    text = 'The workflow sometimes fails with a "could not resize shared memory segment" error.\n'
    assert classify(text).cls == "shm_exhausted"


def test_a_liveness_probe_kill_told_in_a_long_sentence_is_the_probes() -> None:
    text = (
        "During a clean install the operator's liveness probe on http://:8080/healthy fails "
        'with "connection refused" because the health server is not yet listening on its '
        "port. The kubelet kills the first container instance (Exit Code 137).\n"
    )
    verdict = classify(text)
    assert (verdict.cls, verdict.family) == ("not_oom", "liveness_probe_kill")


def test_what_to_watch_for_after_a_change_is_not_a_report() -> None:
    text = (
        "Lowers the pod's memory request to 1280Mi; the limit stays at 2Gi.\n"
        "After merge: watch for any OOM over the next few days.\n"
    )
    assert classify(text).family != "host_oom_told_in_words"


def test_a_general_remark_about_builds_using_all_memory_is_not_this_kill() -> None:
    text = (
        "`(signal: 9, SIGKILL: kill)`\n"
        "Sometimes the build is killed by the kernel because it takes up all system memory. "
        "Perhaps that is the problem here.\n"
    )
    assert classify(text).cls != "host_oom_killed"


def test_the_os_oom_killer_named_as_what_killed_is_a_host_kill_told() -> None:
    text = "As each rank loads its shard the OS OOM killer silently SIGKILLs the later ranks.\n"
    verdict = classify(text)
    assert (verdict.cls, verdict.family) == ("host_oom_killed", "memory_kill_in_prose")
