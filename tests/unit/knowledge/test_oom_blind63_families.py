"""The families of the sixty-third and sixty-fourth parts (edge GPUs and unified memory; GPU
and ML code outside Python): each is read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] "
        "Command buffer execution failed: Insufficient Memory\n",
        'Fatal error: Error Domain=MTLCommandBufferErrorDomain Code=8 "Insufficient Memory '
        '(IOAF code 8)"\n',
        "NvMapMemAllocInternalTagged: 1075072515 error 12\n",
    ],
)
def test_unified_memorys_gpu_share_running_out_is_the_cards(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "Message from debugger: Terminated due to memory issue\n",
        "The app \u201cDemo\u201d has been killed by the operating system because it is using "
        "too much memory.\n",
        "```\nkilled out of memory\n```\n",
    ],
)
def test_a_kill_for_the_hosts_memory_in_its_platforms_words_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "c++: internal compiler error: Killed (program cc1plus)\n",
        'When I start it I run into a simple "killed" message and nothing else.\n',
        '"killed" error when starting the tracker\n',
    ],
)
def test_a_kill_in_a_compilers_or_a_reporters_words_is_a_kill(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


def test_tensorrt_skipping_a_tactic_is_a_notice() -> None:
    text = (
        "[W] [TRT] Tactic Device request: 4229MB Available: 2658MB. Device memory is "
        "insufficient to use tactic.\n"
        "[W] [TRT] Skipping tactic 3 due to insufficient memory on requested size of 4229.\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "memory_notice")


def test_jetsons_device_nodes_refused_is_no_host_memory() -> None:
    text = (
        "Error: Can't initialize nvrm channel\n"
        "Couldn't create ddkvic Session:\n"
        "Cannot allocate memory nvbuf_utils:\n"
        "Could not create Default NvBufferSession\n"
    )
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "device_access_denied")
    assert "video group" in " ".join(triage.advice)


@pytest.mark.parametrize(
    "text",
    [
        # Advice, a guess and another Metal error are no OOM.
        "If the command buffer execution failed: Insufficient Memory, try a smaller image?\n",
        'MTLCommandBufferErrorDomain Code=2 "Timed out"\n',
        # A kill line that names no cause, and memory refused with nothing about the device.
        "killed out of curiosity\n",
    ],
)
def test_lookalikes_are_not_read_as_the_family(text: str) -> None:
    assert classify(text).cls not in ("cuda_oom", "host_oom_killed")


def test_enomem_without_the_device_nodes_is_still_host_memory() -> None:
    text = "Couldn't create ddkvic Session:\nCannot allocate memory nvbuf_utils:\n"
    assert classify(text).cls == "host_oom_killed"
