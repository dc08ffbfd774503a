"""The literal words a pattern cannot match without: a cheap test before any regex is run.

Python's `re` tries an alternation of case-insensitive words at every position of a line, so
a megabyte of digits, spaces or short lines costs seconds across the families. Every family's
pattern, though, needs at least one of a few literal words (`out of memory`, `killed`, `oom`)
to match. They are read once from the compiled pattern's parse tree: a sequence needs any one
of its parts' words (the most selective is kept), an alternation needs one of each branch's,
a repeat of at least one needs its item's. A pattern whose words cannot be told (a bare `\\d`,
an optional part) has none, and is always run. Words are compared lower-case against a
lower-cased log, so the test never refuses a line the pattern would match.
"""

from __future__ import annotations

import re
from functools import cache
from re import _constants as sre_c  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

_MAX_CLASS_CHARS = 8  # a [abc] class of up to this many characters counts as words
Words = frozenset[str]


def _best(options: list[Words]) -> Words | None:
    """The most selective set: the one whose shortest word is longest, then whose words are
    longest together (`exited`/`returned` over ` with `)."""
    if not options:
        return None
    return max(options, key=lambda words: (min(map(len, words)), sum(map(len, words))))


def _item(op: Any, av: Any) -> Words | None:
    if op is sre_c.SUBPATTERN:
        return _sequence(av[3])
    if op is sre_c.ATOMIC_GROUP:
        return _sequence(av)
    if op is sre_c.BRANCH:
        union: set[str] = set()
        for branch in av[1]:
            words = _sequence(branch)
            if words is None:
                return None
            union |= words
        return frozenset(union)
    if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT):
        low, _high, body = av
        return _sequence(body) if low >= 1 else None
    if op is sre_c.IN:
        chars = [chr(value) for kind, value in av if kind is sre_c.LITERAL]
        if len(chars) == len(av) and 0 < len(chars) <= _MAX_CLASS_CHARS:
            return frozenset(c.lower() for c in chars)
        return None
    return None


def _sequence(items: Any) -> Words | None:
    options: list[Words] = []
    run = ""
    for op, av in items:
        if op is sre_c.LITERAL:
            run += chr(av)
            continue
        if run:
            options.append(frozenset({run.lower()}))
            run = ""
        if (words := _item(op, av)) is not None:
            options.append(words)
    if run:
        options.append(frozenset({run.lower()}))
    return _best(options)


@cache
def words(pattern: re.Pattern[str], *, across_lines: bool = False) -> Words | None:
    """Lower-case words one of which every match of `pattern` contains, or None if unknown.

    With `across_lines`, for a family whose message may be wrapped onto the next line, each
    word is cut to its longest piece without whitespace, so that a wrap cannot split it."""
    try:
        found = _sequence(sre_parse.parse(pattern.pattern, pattern.flags))
    except (re.error, RecursionError, TypeError, ValueError):
        return None
    if found is None:
        return None
    # Blanks at a word's ends add nothing and make the search slow on runs of blanks.
    pieces = {
        max(word.split(), key=len, default="") if across_lines else word.strip() for word in found
    }
    return None if "" in pieces else frozenset(pieces)


def may_match(pattern: re.Pattern[str], lowered: str) -> bool:
    """False only when `lowered` (a lower-cased text) holds none of `pattern`'s words."""
    needed = words(pattern)
    return needed is None or any(word in lowered for word in needed)
