"""The families of the thirty-third part (edge, embedded, media and graphics) and the
thirty-fourth (computational biology and scientific Python): each is read in its own words,
and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        "[h264_nvenc @ 0x55d0] InitializeEncoder failed: out of memory (10):\n",
        "[hevc_nvenc @ 0x7f00] CreateBitstreamBuffer failed: out of memory (10)\n",
        "called `Result::unwrap()` on an `Err` value: OomError(OutOfDeviceMemory)\n",
        "CuSparseError: CUSPARSE_STATUS_ALLOC_FAILED\n",
    ],
)
def test_the_encoder_vulkano_and_cusparse_out_of_device_memory_is_gpu_memory(text: str) -> None:
    assert classify(text).cls == "cuda_oom"


def test_an_encoders_session_limit_is_not_gpu_memory() -> None:
    text = "[h264_nvenc @ 0x55d0] OpenEncodeSessionEx failed: incompatible client key (21)\n"
    assert classify(text).cls != "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "Could not allocate memory: System out of memory!\n"
        "Trying to allocate: 536870912B with 16 alignment. MemoryLabel: Physics\n",
        "DynamicHeapAllocator out of memory - Could not get memory for large allocation 65536.\n",
        '[espresso] exception=Espresso exception: "Memory error": Memory allocation error 12: '
        "1448370000 bytes status=-4\n",
        "app(1,0x1) malloc: can't allocate region\n"
        ":*** mach_vm_map(size=1448378368, flags: 100) failed (error code=3)\n",
        "The process was killed by `systemd-oomd`, which watches memory pressure.\n",
        "under_oom detected for 5 seconds. Cache usage 1 less than minimum 2, re-enabling OOM "
        "killer\nrank 3 died from signal 9\n",
        "dyn.sh: line 7: 12989 Killed   python run.py\n"
        "The error vanished after I upgraded my system with additional RAM.\n",
    ],
)
def test_host_memory_in_engines_phones_and_clusters_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        "Could not allocate memory: System out of memory!\n"
        "Trying to allocate: 18446744070557600280B with 16 alignment. MemoryLabel: Temp\n",
        "python(1,0x1) malloc: can't allocate region\n"
        ":*** mach_vm_map(size=96180599144448, flags: 100) failed (error code=3)\n",
        "MemoryError: Unable to allocate 87.5 TiB for an array with shape (3509216256, 2284, 3)\n",
    ],
)
def test_a_size_no_machine_holds_is_not_a_host_kill(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "absurd_request")


def test_a_large_but_possible_numpy_request_is_still_host_memory() -> None:
    text = "MemoryError: Unable to allocate 3.5 TiB for an array with shape (1000000, 1000000)\n"
    assert classify(text).cls == "host_oom_killed"


@pytest.mark.parametrize(
    "text",
    [
        'the code stops with last words of "Killed" ?\n',
        'killed without any error message apart from one string: "Killed".\n',
        "when I run convert.py, it showed Killed at last.\n",
    ],
)
def test_the_shells_word_quoted_or_reported_is_a_kill(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


def test_androids_phantom_process_killer_is_not_an_oom() -> None:
    text = (
        "[Process completed (signal 9) - press Enter]\n"
        "Android OS will kill any (phantom) processes greater than 32 and any using excessive CPU\n"
    )
    assert classify(text).cls == "not_oom"
