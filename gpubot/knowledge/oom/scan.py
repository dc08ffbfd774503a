"""Scanning a log for a family of evidence: bounded reading, wrapped lines, nearby context.

A family is matched line by line over the tail of a log. Some wordings need a second look: a
message wrapped over two lines (JAX/XLA), or an error whose meaning depends on a nearby line
(`[Errno 28] No space left on device` is /dev/shm only when the traceback is in
multiprocessing's SemLock).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate
from typing import Literal

from gpubot.knowledge.oom.literals import words
from gpubot.knowledge.oom.unwrap import unwrap

OomClass = Literal[
    "cuda_oom",
    "cuda_oom_fragmentation",
    "host_oom_killed",
    "shm_exhausted",
    "killed_unknown",
    "not_oom",
    # Memory words that no family explains: the log alone cannot tell.
    "cannot_tell",
]
Confidence = Literal["high", "medium", "low"]

# Logs can be megabytes: the failure is near the end, so the tail is what is read.
MAX_SCAN_CHARS = 2 * 1024 * 1024
MAX_LINES = 50_000  # and of those, the last lines only (a line costs Python work)
MAX_LINE_CHARS = 8 * 1024  # longer lines are read in pieces of this size
WRAP_JOIN_CHARS = 400  # how much of the next line a wrapped message may continue into
WRAP_LINES = 4  # how many lines a message wrapped inside a parenthesis may run over
HARD_WRAP_MIN = 72  # a line at least this long, ending mid-sentence, was cut at a fixed width
# A family's pattern runs only on the lines holding one of its words (oom_literals), and on
# at most this many of them and this many characters, the last ones: a log that repeats a
# word on every line (a hostile one, or a retry loop) costs no more than that per family.
MAX_CANDIDATE_LINES = 4096
MAX_CANDIDATE_CHARS = 32 * 1024
# A traceback printed around an error line is followed this far at most, either way.
MAX_TRACEBACK_LINES = 80


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
    # When set, `near` may also be anywhere in the traceback printed around the line (frames
    # and code lines, indented), which some loggers print after the error, not before.
    near_traceback: bool = False
    # When set, `pattern` does not count if this matches within `unless_span` lines either
    # side: a lookalike known by what is printed with it (PostgreSQL's "out of shared
    # memory" and its hint on the next line).
    unless_near: re.Pattern[str] | None = None
    unless_span: int = 0
    # When set, `unless` is read in the sentence around each match of `pattern`, not in the
    # whole line: a pasted paragraph is one line, and a hedge in another of its sentences
    # says nothing about this one.
    unless_in_sentence: bool = False


@dataclass(frozen=True)
class Match:
    """A family found in the log, with the lines it rests on."""

    family: Family
    lines: tuple[str, ...]
    # The matched lines with the line after each, a message's continuation joined back on
    # (a pasted or wrapped message can break its numbers over two lines).
    context: str = ""


class Lines(list[str]):
    """A log's lines, with the lower-cased text that families' words are looked up in."""

    @cached_property
    def lowered(self) -> str:
        return "\n".join(self).lower()

    @cached_property
    def starts(self) -> list[int]:
        """Where each line starts in `lowered`."""
        if len(self.lowered) != sum(map(len, self)) + max(0, len(self) - 1):
            # Lower-casing changed a length (a non-ASCII letter): lower the lines one by one.
            lowered = [line.lower() for line in self]
            self.__dict__["lowered"] = "\n".join(lowered)
            return list(accumulate((len(line) + 1 for line in lowered), initial=0))[:-1]
        return list(accumulate((len(line) + 1 for line in self), initial=0))[:-1]

    def holding(self, needed: frozenset[str]) -> list[int]:
        """The indices of the lines that hold one of `needed`, in order: for each word, the
        last MAX_CANDIDATE_LINES lines holding it at most (read from the end)."""
        found: set[int] = set()
        for word in needed:
            found.update(self._holding_word(word))
        return sorted(found)[-MAX_CANDIDATE_LINES:]

    def _has_chars(self, word: str) -> bool:
        """Whether every character of `word` is somewhere in the text (one quick scan per
        character: a megabyte of digits or blanks rules out nearly every word at once)."""
        present: dict[str, bool] = self.__dict__.setdefault("_chars", {})
        for char in word:
            if char not in present:
                present[char] = char in self.lowered
            if not present[char]:
                return False
        return True

    def _holding_word(self, word: str) -> list[int]:
        cache: dict[str, list[int]] = self.__dict__.setdefault("_by_word", {})
        if word in cache:
            return cache[word]
        starts = self.starts  # first: it may re-lower the text
        text, out = self.lowered, list[int]()
        # A forward search is much faster than rfind when the word is absent.
        if self._has_chars(word) and word in text:
            at = text.rfind(word)
            while at != -1 and len(out) < MAX_CANDIDATE_LINES:
                line = bisect_right(starts, at) - 1
                out.append(line)
                at = text.rfind(word, 0, starts[line])  # one hit is enough for a line
        cache[word] = out
        return out


# Signs that a collector wrapped the lines (oom_unwrap): without any, lines are taken as they
# are, at C speed, however many there are.
_WRAPPED_ANYWHERE = ("\x1b", "\r", "\\n", "\n{", "\n[pod/", "\n[job/", "\n[deployment/")
_WRAPPED_LINE_START = re.compile(r"\n\d{4}-\d\d-\d\dT", re.ASCII)  # starts with a literal


def _wrapped(text: str) -> bool:
    head = text[:32]
    return (
        any(sign in text for sign in _WRAPPED_ANYWHERE)
        or "\n[statefulset/" in text
        or head.startswith(("{", "[pod/", "[job/", "[deployment/", "[statefulset/"))
        or _WRAPPED_LINE_START.search("\n" + head) is not None
        or _WRAPPED_LINE_START.search(text) is not None
    )


def log_lines(text: str) -> Lines:
    """The tail of `text` as the lines the workload printed (out of the collectors' wrappers:
    oom_unwrap), very long lines cut into pieces."""
    if len(text) > MAX_SCAN_CHARS:
        text = text[-MAX_SCAN_CHARS:]
    collected = text.splitlines()[-MAX_LINES:]
    if not _wrapped(text):
        if not collected or max(map(len, collected)) <= MAX_LINE_CHARS:
            return Lines(collected)
        printed = collected
    else:
        printed = [line for each in collected for line in unwrap(each)][-MAX_LINES:]
    lines = Lines()
    for line in printed:
        if len(line) <= MAX_LINE_CHARS:
            lines.append(line)
        else:
            lines += [line[i : i + MAX_LINE_CHARS] for i in range(0, len(line), MAX_LINE_CHARS)]
    return lines


def lines_matching(pattern: re.Pattern[str], lines: Sequence[str]) -> list[str]:
    """The lines `pattern` matches, looked for only among those holding its words."""
    needed = words(pattern)
    if needed is None:
        return [line for line in lines if pattern.search(line)]
    indexed = lines if isinstance(lines, Lines) else Lines(lines)
    return [indexed[i] for i in indexed.holding(needed) if pattern.search(indexed[i])]


def _candidates(family: Family, lines: Sequence[str]) -> list[int]:
    """The lines `family` can match on: those holding one of its words (and, for a wrapped
    message, the line before each), the last MAX_CANDIDATE_CHARS of them."""
    needed = words(family.pattern, across_lines=family.wraps)
    if needed is None:
        found = list(range(len(lines)))
    else:
        found = (lines if isinstance(lines, Lines) else Lines(lines)).holding(needed)
        if family.wraps:
            found = sorted({*found, *(i - 1 for i in found if i > 0)})
    budget, first = MAX_CANDIDATE_CHARS, len(found)
    while first > 0 and budget > 0:
        first -= 1
        budget -= len(lines[found[first]]) + 1
    return found[first:]


def _traceback_around(lines: Sequence[str], i: int) -> tuple[int, int]:
    """The lines of the traceback printed around line `i`: frames and indented code."""

    def framed(line: str) -> bool:
        return line.startswith((" ", "\t", "File ", "Traceback"))

    lo = i
    while lo > 0 and i - lo < MAX_TRACEBACK_LINES and framed(lines[lo - 1]):
        lo -= 1
    hi = i + 1
    while hi < len(lines) and hi - i <= MAX_TRACEBACK_LINES and framed(lines[hi]):
        hi += 1
    return lo, hi


def find(family: Family, lines: Sequence[str]) -> Match | None:
    """Where `family` shows in `lines`, if anywhere; every evidence line once, in log order."""
    hits: dict[int, None] = {}
    for i in _candidates(family, lines):
        line = lines[i]
        by_sentence = family.unless_in_sentence
        if family.unless is not None and not by_sentence and family.unless.search(line):
            continue
        joined = False
        text = line
        if not family.pattern.search(line):
            if not family.wraps or i + 1 >= len(lines):
                continue
            both = line.rstrip() + " " + lines[i + 1].strip()[:WRAP_JOIN_CHARS]
            found = family.pattern.search(both)
            if found is None or found.start() >= len(line.rstrip()):
                continue
            joined, text = True, both
        if by_sentence and family.unless is not None and not _unhedged(family, text):
            continue
        if family.unless_near is not None:
            lo, hi = max(0, i - family.unless_span), min(len(lines), i + family.unless_span + 1)
            if any(family.unless_near.search(lines[j]) for j in range(lo, hi)):
                continue
        if family.near is not None:
            lo, hi = max(0, i - family.span), min(len(lines), i + family.span + 1)
            if family.near_traceback:
                block = _traceback_around(lines, i)
                lo, hi = min(lo, block[0]), max(hi, block[1])
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


_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def _unhedged(family: Family, text: str) -> bool:
    """Whether some match of `family.pattern` in `text` has no `family.unless` in its own
    sentence (from the end of the sentence before it to the end of its own)."""
    assert family.unless is not None
    for found in family.pattern.finditer(text):
        start = max(text.rfind(mark, 0, found.start()) for mark in (". ", "! ", "? ")) + 1
        after = _SENTENCE_END.search(text, found.end())
        sentence = text[start : after.end() if after else len(text)]
        if not family.unless.search(sentence):
            return True
    return False


def _context(lines: Sequence[str], hits: dict[int, None]) -> str:
    """Runs of consecutive hit-or-following lines, each run joined into one line. A message
    wrapped over several lines ("(GPU 0; 39.56" / "GiB total capacity; ..." / "reserved in
    total by PyTorch)") is followed while its parenthesis is open, up to WRAP_LINES lines."""
    wanted = sorted({*hits, *(j for i in hits for j in _continued(lines, i))})
    runs: list[list[str]] = []
    for k, i in enumerate(wanted):
        if k == 0 or wanted[k - 1] != i - 1:
            runs.append([])
        runs[-1].append(lines[i].strip()[:WRAP_JOIN_CHARS] if i not in hits else lines[i].strip())
    return "\n".join(" ".join(run) for run in runs)


def _continued(lines: Sequence[str], i: int) -> range:
    """The lines after line `i` that continue its message: the next one, and more while a
    parenthesis opened on them stays open, the line before was cut at a fixed width (a
    terminal's or a pager's hard wrap: a long line ending mid-sentence), or the next line is
    one of the figures an allocator prints under its message, one to a line."""
    depth = lines[i].count("(") - lines[i].count(")")
    end = i + 1
    while end < len(lines) and end <= i + WRAP_LINES and lines[end].strip():
        depth += lines[end].count("(") - lines[end].count(")")
        end += 1
        if depth <= 0 and not _cut(lines[end - 1]) and not _summary_next(lines, end):
            break
    return range(i + 1, end)


# An allocator's figures printed one to a line under its message: "PyTorch allocated: 18.40
# GiB", "- Free memory: 224067584", "GPU has 19.53 GiB total".
_SUMMARY = re.compile(
    r"[-*\s]{0,4}(?:[A-Za-z][\w ()/-]{0,30}?)?\b(?:free|requested|allocated|unallocated|reserved"
    r"|total|cached|in use|available|capacity|limit)(?: memory| bytes)?: [\d.,]{1,20} ?"
    r"(?:[KMGT]i?B|bytes|B)?(?:\s|$)"
    r"|GPU(?: \d{1,2})? has [\d.,]{1,20} ?[KMGT]i?B total\b",
    re.ASCII | re.IGNORECASE,
)


def _summary_next(lines: Sequence[str], end: int) -> bool:
    return end < len(lines) and _SUMMARY.match(lines[end]) is not None


def _cut(line: str) -> bool:
    """A long line that ends mid-sentence: wrapped at a fixed width, the rest on the next."""
    text = line.rstrip()
    return len(text) >= HARD_WRAP_MIN and not text.endswith((".", ")", ":", "`", '"', "'"))


def find_first(families: Sequence[Family], lines: Sequence[str]) -> list[Match]:
    """Every family of `families` found in `lines`, in the order the families are listed."""
    return [m for f in families if (m := find(f, lines)) is not None]
