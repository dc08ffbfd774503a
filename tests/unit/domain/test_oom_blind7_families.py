"""Families added after the seventh blind part: each reads its wording (synthetic lines in the
families' own words), and a lookalike that must not be read as it."""

from __future__ import annotations

import pytest

from gpubot.domain.oom import classify


@pytest.mark.parametrize(
    "text",
    [
        'Error: DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")\n',
        "Error: System is out of GPU and shared host memory\n",
        "Error while calling cudaMalloc(&backward_data_workspace, workspace_size_in_bytes) in "
        "file dlib/dnn/cudnn_dlibapi.cpp:908. code: 2, reason: out of memory\n",
        "[h264_nvenc @ 0x55d0] OpenEncodeSessionEx failed: out of memory (10): (no details)\n"
        "Error opening video encoder : Cannot allocate memory\n",
    ],
)
def test_gpu_memory_in_other_ecosystems(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "cuda_oom", triage.family


@pytest.mark.parametrize(
    "text",
    [
        "mkl_malloc: failed to allocate memory\n",
        "blender(400,0xa19571a8) malloc: *** mach_vm_map(size=193413120) failed (error code=3)\n",
        "Memory limit of 512 MiB exceeded with 516 MiB used. Consider increasing the memory "
        "limit.\n",
        "TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.\nExited with exit code "
        "143.\n",
        "=>> PBS: job killed: mem 38427376kb exceeded limit 33554432kb\n",
        "Exceeded soft private memory limit with 133.961 MB after servicing 1085 requests total\n",
        "The replica master 0 ran out-of-memory and exited with a non-zero status of 9(SIGKILL)\n",
    ],
)
def test_host_memory_as_schedulers_and_platforms_report_it(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "host_oom_killed", triage.family


def test_a_negative_size_cast_to_unsigned_on_macos_is_another_bug() -> None:
    text = "python(732) malloc: *** mach_vm_map(size=18446744071562067968) failed (error code=3)\n"
    assert classify(text).cls != "host_oom_killed"


def test_postgres_dynamic_shared_memory_full_is_shared_memory() -> None:
    text = (
        'ERROR:  could not resize shared memory segment "/PostgreSQL.1767612635" to 183552 '
        "bytes: No space left on device\n"
    )
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        ("pid:1 worker[app:44] exit with status 9\n", "killed_unknown"),
        ("pid:1 worker[app:44] exit with status 1\n", "not_oom"),
        ("=>> PBS: job killed: walltime 3610 exceeded limit 3600\n", "not_oom"),
    ],
)
def test_other_statuses_and_limits_are_not_memory(text: str, cls: str) -> None:
    assert classify(text).cls == cls
