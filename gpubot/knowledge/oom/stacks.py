"""Memory failures as ML serving stacks and their hosts report them, in their own shapes.

An inference runtime's arena message may reach the log cut short (a tracker's title keeps the
first 256 characters), and whether it is the GPU's or the host's is told by the node it ran
(ONNX Runtime's NCHWc layout exists only on the CPU); the kernel's OOM killer may be seen only
by its task table's rows in syslog; a report may say in a sentence that nodes ran low on memory
and workers were killed; NCCL's shared-memory transport may be named only by its function.
Patterns follow the bounds of *_families: literals and bounded repeats.
"""

from __future__ import annotations

import re

from gpubot.knowledge.oom.scan import Family


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | flags)


_I = re.IGNORECASE
# ONNX Runtime's arena refusing a buffer, whole or cut anywhere after "Failed to alloc".
_ORT_ARENA_FAILED = r"BFCArena::AllocateRawInternal\b[^\n]{0,240}?\bFailed to alloc"
# What names ONNX Runtime's CPU provider on the failing line: its arena or allocator, or a
# node of the NCHWc layout, which only the CPU provider's layout transformer makes.
ORT_CPU = (
    r"BFCArena for Cpu|CPUExecutionProvider|\bCpu(?:Arena|Allocator)\b|_nchwc\b|\bNchwc\w{0,20}"
)

STACK_GPU_OOM: tuple[Family, ...] = (
    # The arena's message cut short before "memory for requested buffer of size N".
    Family(
        "onnxruntime_arena_cut",
        "cuda_oom",
        "medium",
        _p(_ORT_ARENA_FAILED + r"(?:a|at|ate)?\s{0,4}$", re.MULTILINE),
        unless=_p(ORT_CPU),
    ),
)

STACK_SHM: tuple[Family, ...] = (
    # NCCL's shared-memory transport named by its function (ncclShmOpen) as failing, or
    # shared memory NCCL could not get. A segment that was not there to attach to is not a
    # full /dev/shm (shared_memory_not_full), nor is a CUDA call's invalid argument.
    Family(
        "nccl_shm_open_failed",
        "shm_exhausted",
        "medium",
        _p(
            r"\bncclShmOpen\b[^\n]{0,40}?\b(?:error|fail(?:ed|s|ure)?)\b"
            r"|\b(?:segfaults?|segmentation fault|SIGSEGV|crash(?:es|ed)?)\b[^\n]{0,20}?\bin\W{0,2}"
            r"ncclShmOpen\b"
            r"|\b(?:unable|not able|wasn'?t able|was not able|failed|could not|couldn'?t|cannot)"
            r" (?:to )?allocate shared memory for (?:the )?NCCL\b",
            _I,
        ),
        unless=_p(r"No such file or directory|\bENOENT\b|invalid argument", _I),
    ),
)

STACK_HOST_OOM: tuple[Family, ...] = (
    # The same arena refusal on the CPU provider: a host allocation refused. Not sure (an
    # arena may be given a cap of its own), but no longer "which memory, cannot tell".
    Family(
        "onnxruntime_cpu_arena",
        "host_oom_killed",
        "low",
        _p(
            r"(?:"
            + ORT_CPU
            + r")[^\n]{0,400}?(?:"
            + _ORT_ARENA_FAILED
            + r"|Failed to allocate memory for requested buffer of size \d)"
        ),
    ),
    # The OOM killer's task table seen only by its rows, as syslog or dmesg prints them
    # after a timestamp: "[ pid ] uid tgid total_vm rss (pgtables|nr_ptes nr_pmds) swapents
    # oom_score_adj name". top's and ps's rows have no bracketed pid; a shell's job line
    # ("[1]+ Killed") has no columns of numbers.
    Family(
        "kernel_oom_task_rows",
        "host_oom_killed",
        "medium",
        _p(
            r"(?:\bkernel:\s{0,4}(?:\[\s{0,8}\d{1,10}\.\d{1,9}\]\s{0,4})?|\]\s{1,4})"
            r"\[\s{0,8}\d{1,10}\](?:\s{1,16}-?\d{1,20}){7,8}\s{1,16}[A-Za-z_.(][^\s]{0,40}\s*$",
            re.MULTILINE,
        ),
    ),
    # A report that nodes ran low on memory and workers or tasks were killed for it (Ray's
    # own words, or someone's reading of its logs). A warning that memory is low, with
    # nothing killed, is not it.
    Family(
        "memory_low_workers_killed",
        "host_oom_killed",
        "medium",
        _p(
            r"\brunning low on (?:memory|RAM)\b[^\n]{0,80}?\b(?:killed|killing|being killed)\b"
            r"|\b(?:killed|killing)\b[^\n]{0,80}?\brunning low on (?:memory|RAM)\b",
            _I,
        ),
        unless=_p(
            r"\bno (?:workers?|tasks?|processes?) (?:were |was |have been |has been )?killed"
            r"|\bnot (?:be )?killed\b|\bbefore (?:it is |being )?killed\b|\bto avoid\b",
            _I,
        ),
    ),
)
