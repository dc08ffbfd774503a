"""Classifying hostile input does a bounded amount of work: lines read, characters handed to
the families' regexes, and the words test never refuses a line its pattern would match."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpubot.knowledge.oom import scan as oom_scan
from gpubot.knowledge.oom.families import GPU_OOM, HOST, SHM
from gpubot.knowledge.oom.kills import LAUNCHER_CHILD_EXIT, SIGKILL
from gpubot.knowledge.oom.literals import words
from gpubot.knowledge.oom.not_memory import (
    LIVENESS,
    NEGATIVE,
    NON_MEMORY_EVICTION,
    STOP_REQUESTED,
)
from gpubot.knowledge.oom.scan import (
    MAX_CANDIDATE_CHARS,
    MAX_LINE_CHARS,
    MAX_LINES,
    Family,
    log_lines,
)
from gpubot.knowledge.oom.triage import classify
from gpubot.knowledge.oom.verdict import gather

FAMILIES: tuple[Family, ...] = (
    *GPU_OOM,
    *SHM,
    *HOST,
    *NEGATIVE,
    SIGKILL,
    LIVENESS,
    STOP_REQUESTED,
    NON_MEMORY_EVICTION,
    LAUNCHER_CHILD_EXIT,
)
MB = 1_000_000
HOSTILE = {
    "a run of digits": "7" * MB,
    "digits in long lines": ("1234567890" * 100 + "\n") * 1000,
    "one line of repeated evidence": ("CUDA out of memory. Tried to allocate 2.00 MiB " * 22000)[
        :MB
    ],
    "100k short lines": "x\n" * 100_000,
    "exit codes on every line": "137\n" * 250_000,
    "Killed on every line": "Killed\n" * 140_000,
    "blanks": " " * MB,
}
CORPUS = sorted((Path(__file__).resolve().parents[2] / "fixtures" / "triage").glob("corpus_*.yaml"))


def test_every_family_has_words_to_look_for() -> None:
    """A family without words would run its regex on every line of every log."""
    assert [f.name for f in FAMILIES if words(f.pattern, across_lines=f.wraps) is None] == []


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_input_is_classified_with_bounded_work(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A megabyte of hostile content is read as at most MAX_LINES lines, and each family's
    regex is handed at most MAX_CANDIDATE_CHARS (plus one line) of it."""
    handed: list[int] = []
    candidates = oom_scan._candidates

    def counting(family: Family, lines: Sequence[str]) -> list[int]:
        found = candidates(family, lines)
        handed.append(sum(len(lines[i]) + 1 for i in found))
        return found

    monkeypatch.setattr(oom_scan, "_candidates", counting)
    text = HOSTILE[name]
    triage = classify(text)
    assert triage.cls in ("cuda_oom", "killed_unknown", "not_oom")
    assert len(log_lines(text)) <= MAX_LINES
    assert handed, "the families were looked for"
    assert max(handed) <= MAX_CANDIDATE_CHARS + MAX_LINE_CHARS + 1


def _found(text: str) -> list[tuple[str, tuple[str, ...]]]:
    facts = gather(text, exit_code=None, reason=None)
    matches = [*facts.gpu_oom, *facts.shm, *facts.host, *facts.negatives]
    singles = [facts.liveness, facts.evicted_not_memory, facts.stop_requested, facts.sigkill]
    matches += [m for m in singles if m is not None]
    return sorted((m.family.name, m.lines) for m in matches)


def _entries() -> list[dict[str, Any]]:
    return [e for path in CORPUS for e in yaml.safe_load(path.read_text(encoding="utf-8"))]


def test_the_words_test_finds_what_reading_every_line_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On every corpus excerpt, the families found by looking only at lines holding their
    words are those found by running every pattern on every line."""
    texts = [e["text"] for e in _entries()]
    with_words = [_found(t) for t in texts]
    monkeypatch.setattr(oom_scan, "words", lambda pattern, across_lines=False: None)
    every_line = [_found(t) for t in texts]
    assert with_words == every_line
