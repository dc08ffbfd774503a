"""Scanning a log for a family of evidence: bounded reading, wrapped lines, nearby context.

A family is matched line by line over the tail of a log. Some wordings need a second look: a
message wrapped over two lines (JAX/XLA), or an error whose meaning depends on a nearby line
(`[Errno 28] No space left on device` is /dev/shm only when the traceback is in
multiprocessing's SemLock).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from gpubot.domain.oom_unwrap import unwrap

OomClass = Literal[
    "cuda_oom",
    "cuda_oom_fragmentation",
    "host_oom_killed",
    "shm_exhausted",
    "killed_unknown",
    "not_oom",
]
Confidence = Literal["high", "medium", "low"]

# Logs can be megabytes: the failure is near the end, so the tail is what is read.
MAX_SCAN_CHARS = 2 * 1024 * 1024
MAX_LINE_CHARS = 8 * 1024  # longer lines are read in pieces of this size
WRAP_JOIN_CHARS = 400  # how much of the next line a wrapped message may continue into


@dataclass(frozen=True)
class Family:
    """One way a failure shows in a log."""

    name: str
    cls: OomClass
    confidence: Confidence
    pattern: re.Pattern[str]
    # When set, `pattern` counts only if `near` matches within `span` lines either side.
    near: re.Pattern[str] | None = None
    span: int = 0
    # When set, `pattern` may also match a line joined with the start of the next one.
    wraps: bool = False
    # When set, a line matching this is not evidence even if `pattern` matches it.
    unless: re.Pattern[str] | None = None


@dataclass(frozen=True)
class Match:
    """A family found in the log, with the lines it rests on."""

    family: Family
    lines: tuple[str, ...]
    # The matched lines with the line after each, a message's continuation joined back on
    # (a pasted or wrapped message can break its numbers over two lines).
    context: str = ""


def log_lines(text: str) -> list[str]:
    """The tail of `text` as the lines the workload printed (out of the collectors' wrappers:
    oom_unwrap), very long lines cut into pieces."""
    if len(text) > MAX_SCAN_CHARS:
        text = text[-MAX_SCAN_CHARS:]
    lines: list[str] = []
    for collected in text.splitlines():
        for line in unwrap(collected):
            if len(line) <= MAX_LINE_CHARS:
                lines.append(line)
            else:
                lines += [line[i : i + MAX_LINE_CHARS] for i in range(0, len(line), MAX_LINE_CHARS)]
    return lines


def find(family: Family, lines: Sequence[str]) -> Match | None:
    """Where `family` shows in `lines`, if anywhere; every evidence line once, in log order."""
    hits: dict[int, None] = {}
    for i, line in enumerate(lines):
        if family.unless is not None and family.unless.search(line):
            continue
        joined = False
        if not family.pattern.search(line):
            if not family.wraps or i + 1 >= len(lines):
                continue
            both = line.rstrip() + " " + lines[i + 1].strip()[:WRAP_JOIN_CHARS]
            found = family.pattern.search(both)
            if found is None or found.start() >= len(line.rstrip()):
                continue
            joined = True
        if family.near is not None:
            lo, hi = max(0, i - family.span), min(len(lines), i + family.span + 1)
            near = [j for j in range(lo, hi) if family.near.search(lines[j])]
            if not near:
                continue
            hits.update(dict.fromkeys(near))
        hits[i] = None
        if joined:
            hits[i + 1] = None
    if not hits:
        return None
    return Match(
        family,
        tuple(lines[i].strip() for i in sorted(hits) if lines[i].strip()),
        _context(lines, hits),
    )


def _context(lines: Sequence[str], hits: dict[int, None]) -> str:
    """Runs of consecutive hit-or-following lines, each run joined into one line."""
    wanted = sorted({*hits, *(i + 1 for i in hits if i + 1 < len(lines))})
    runs: list[list[str]] = []
    for k, i in enumerate(wanted):
        if k == 0 or wanted[k - 1] != i - 1:
            runs.append([])
        runs[-1].append(lines[i].strip()[:WRAP_JOIN_CHARS] if i not in hits else lines[i].strip())
    return "\n".join(" ".join(run) for run in runs)


def find_first(families: Sequence[Family], lines: Sequence[str]) -> list[Match]:
    """Every family of `families` found in `lines`, in the order the families are listed."""
    return [m for f in families if (m := find(f, lines)) is not None]
