"""Every corpus excerpt gets the same verdict (class and family) when collected the way real
pipelines hand logs over: Windows line ends, ANSI colours, `kubectl logs --prefix
--timestamps`, a container runtime's JSON lines (with Go's HTML escaping), and the CRI log
format. The unwrapping costs linear time on hostile input."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpubot.knowledge.oom.triage import classify
from gpubot.knowledge.oom.unwrap import MAX_LINES_PER_LINE, unwrap

CORPUS_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "triage"
ENTRIES: list[dict[str, Any]] = [
    entry
    for path in sorted(CORPUS_DIR.glob("corpus_*.yaml"))
    for entry in yaml.safe_load(path.read_text(encoding="utf-8")) or []
]
STAMP = "2024-01-01T00:00:00.000000000Z"


def _each_line(wrap: Callable[[int, str], str]) -> Callable[[str], str]:
    return lambda text: "\n".join(wrap(i, line) for i, line in enumerate(text.split("\n")))


def _docker_json(_: int, line: str) -> str:
    record = json.dumps({"log": line + "\n", "stream": "stderr", "time": STAMP}, ensure_ascii=False)
    return record.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


WRAPPERS: dict[str, Callable[[str], str]] = {
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "ansi": _each_line(lambda i, line: f"\x1b[{31 + i % 6};1m{line}\x1b[0m\x1b[K"),
    "kubectl": _each_line(lambda _, line: f"[pod/train-7f9c/trainer] {STAMP} {line}"),
    "docker-json": _each_line(_docker_json),
    "cri": _each_line(lambda _, line: f"{STAMP} stderr F {line}"),
}


def _verdict(entry: dict[str, Any], text: str) -> tuple[str, str]:
    pod = entry.get("pod") or {}
    triage = classify(text, exit_code=pod.get("exit_code"), reason=pod.get("reason"))
    return triage.cls, triage.family


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
@pytest.mark.parametrize("entry", [pytest.param(e, id=e["id"]) for e in ENTRIES])
def test_a_wrapped_excerpt_gets_the_clean_excerpts_verdict(
    entry: dict[str, Any], wrapper: str
) -> None:
    clean = _verdict(entry, entry["text"])
    assert _verdict(entry, WRAPPERS[wrapper](entry["text"])) == clean


@pytest.mark.parametrize(
    ("line", "printed"),
    [
        ('{"log":"Killed\\n","stream":"stderr","time":"' + STAMP + '"}', ["Killed"]),
        ("[pod/a/b] " + STAMP + " Killed", ["Killed"]),
        (STAMP + " stdout F Killed", ["Killed"]),
        ("\x1b[1;31mKilled\x1b[0m", ["Killed"]),
        ('Server error: "CUDA out of memory.\\nTried to allocate 2.00 MiB\\n\\tat x"', None),
    ],
)
def test_unwrap_gives_the_printed_lines(line: str, printed: list[str] | None) -> None:
    lines = unwrap(line)
    if printed is not None:
        assert lines == printed
    else:  # a JSON-escaped message with its newlines as \n: one printed line each
        assert lines == [
            'Server error: "CUDA out of memory.',
            "Tried to allocate 2.00 MiB",
            '\tat x"',
        ]


@pytest.mark.parametrize(
    "line",
    [
        "C:\\new_models\\run.py failed",  # one \n in a Windows path is not an escape
        "[INFO] 2024-01-01T00:00:00Z model loaded",  # a bracket that is no kubectl prefix
        '{"log": broken json',
    ],
)
def test_unwrap_leaves_lookalikes_alone(line: str) -> None:
    assert unwrap(line) == [line]


def test_unwrapping_hostile_lines_costs_linear_time() -> None:
    hostile = "\n".join(
        [
            "\x1b[" + "1;" * 500_000,
            '{"log":"' + "\\n" * 500_000,
            "[pod/" + "a" * 1_000_000,
            STAMP[:10] + "T" + "0" * 1_000_000,
        ]
    )
    start = time.perf_counter()
    triage = classify(hostile)
    assert time.perf_counter() - start < 20  # generous: a quadratic scan takes hours
    assert triage.cls == "not_oom"
    assert len(unwrap('{"log":"' + "x\\n" * 100_000 + '"}')) == MAX_LINES_PER_LINE
