"""Durations as runbooks write them: `90s`, `5m`, `1h30m`, or a number of seconds."""

from __future__ import annotations

import math
import re

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: str | int | float) -> float:
    """Seconds in `value`; raise ValueError with a one-line reason if it is not a duration."""
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"duration must not be negative: {value}")
        return float(value)
    text = value.strip()
    if not text:
        raise ValueError("empty duration")
    pos, total = 0, 0.0
    for part in _PART.finditer(text):
        if part.start() != pos:
            break
        total += float(part[1]) * _UNIT[part[2]]
        pos = part.end()
    if pos != len(text):
        raise ValueError(f"not a duration: {value!r} (use e.g. 30s, 5m, 1h30m)")
    return total
