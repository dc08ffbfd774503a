"""What every benchmark prints: one JSON line of figures, its baseline, and targets met or not."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def use_test_helpers(*folders: str) -> None:
    """Make the stand-ins under tests/ importable by their bare names, as the tests do
    (tests/ itself too: the helpers they share, such as `waiting`)."""
    for folder in (*folders, ""):
        path = str(REPO / "tests" / folder) if folder else str(REPO / "tests")
        if path not in sys.path:
            sys.path.insert(0, path)


def percentiles(seconds: Sequence[float]) -> dict[str, float]:
    """p50, p99 and max in milliseconds (nearest rank: p99 of 100 samples is the 99th)."""
    ordered = sorted(seconds)

    def rank(q: float) -> float:
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)] * 1000

    return {
        "p50_ms": round(rank(0.50), 2),
        "p99_ms": round(rank(0.99), 2),
        "max_ms": round(ordered[-1] * 1000, 2),
        "samples": len(ordered),
    }


def at_most(value: float, limit: float) -> dict[str, Any]:
    return {"value": value, "at_most": limit, "met": value <= limit}


def at_least(value: float, limit: float) -> dict[str, Any]:
    return {"value": value, "at_least": limit, "met": value >= limit}


def emit(benchmark: str, *, targets: dict[str, dict[str, Any]], **figures: Any) -> None:
    """Print the one JSON line: the figures (baseline among them), each target, all_met."""
    record = {
        "benchmark": benchmark,
        **figures,
        "targets": targets,
        "all_met": all(t["met"] for t in targets.values()),
    }
    print(json.dumps(record), flush=True)
