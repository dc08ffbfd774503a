"""DCGM diagnostics (`dcgmi diag -j`) read into per-GPU, per-test results: every shape DCGM wrote.

Pure: text in, values out. The shapes (tests/fixtures/dcgm/README.md names the sources):

* NVVS 1.x-3.x: ``{"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests":
  [{"name", "results": [{"gpu_ids", "status", "warnings"?, "info"?}]}]}], "version"}}``;
  ``gpu_ids`` is a CSV string ("0,1,2") for the deployment tests, else one id as a string or
  an int; ``warnings`` are strings or ``{"warning", "error_id"}``; ``info`` a list or one
  string; statuses PASS/FAIL/WARN/SKIPPED or Pass/Fail/Warn/Skip; ``null`` may sit between
  tests; dcgmi may print a line before the JSON.
* DCGM 3.2+/4.x: ``{"DCGM Diagnostic": {"test_categories": [... "results": [{"entity_group",
  "entity_group_id", "entity_id", "status", "warnings": [{"warning", "error_id",
  "error_category", "error_severity"}], "info": [...]}], "test_summary": {"status", "info"?}
  ...], "runtime_error"?}, "entity_groups": [...], "metadata": {"version", ...}}``.

What DCGM says stays data: messages are kept, capped in length at a word boundary.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

DiagStatus = Literal["pass", "warn", "fail", "skip"]
# What happens when DCGM cannot run on a node (policy.diag_unavailable): `approve` releases
# it only through an approval that names the missing check; `stop` leaves it for a human.
DiagUnavailable = Literal["approve", "stop"]
LEVELS = (1, 2, 3)
# How long each level may take before the agent stops it: NVIDIA gives level 1 seconds,
# level 2 about two minutes and level 3 about fifteen per node; margins for 8-GPU nodes.
DIAG_TIMEOUT_S: dict[int, float] = {1: 300.0, 2: 900.0, 3: 3600.0}
MESSAGE_CHARS = 300  # one DCGM message, as kept
MESSAGES_PER_RESULT = 8
_ROOTS = ("DCGM GPU Diagnostic", "DCGM Diagnostic")
_STATUS: dict[str, DiagStatus] = {
    "pass": "pass",
    "passed": "pass",
    "warn": "warn",
    "warning": "warn",
    "fail": "fail",
    "failed": "fail",
    "skip": "skip",
    "skipped": "skip",
    "not run": "skip",
    "notrun": "skip",
}
_RANK: dict[DiagStatus, int] = {"skip": 0, "pass": 1, "warn": 2, "fail": 3}


class DiagParseError(ValueError):
    """The text is not a DCGM diagnostic result; the message says what was wrong, in a line."""


def cap(text: str, limit: int = MESSAGE_CHARS) -> str:
    """`text` on one line, at most `limit` characters, cut at a word boundary (then "…")."""
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:  # a word boundary not too far back; else a very long "word"
        cut = cut[:space]
    return cut.rstrip(" ,;:.") + "…"


@dataclass(frozen=True)
class TestResult:
    """One test on one GPU (gpu None: a result DCGM gave for no GPU in particular)."""

    __test__ = False  # not a pytest class, whatever its name

    test: str
    status: DiagStatus
    gpu: int | None = None
    category: str = ""
    messages: tuple[str, ...] = ()  # DCGM's warnings first, then its info
    error_ids: tuple[int, ...] = ()  # DCGM_FR_* codes of the warnings, where given

    def as_json(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "status": self.status,
            "gpu": self.gpu,
            "category": self.category,
            "messages": list(self.messages),
            "error_ids": list(self.error_ids),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TestResult:
        status = _STATUS.get(str(data.get("status", "")).lower())
        if status is None:
            raise DiagParseError(f"unknown test status {str(data.get('status'))[:20]!r}")
        gpu = data.get("gpu")
        return cls(
            test=cap(str(data["test"]), 80),
            status=status,
            gpu=int(gpu) if gpu is not None else None,
            category=cap(str(data.get("category", "")), 40),
            messages=tuple(cap(str(m)) for m in data.get("messages", ())[:MESSAGES_PER_RESULT]),
            error_ids=tuple(int(e) for e in data.get("error_ids", ())),
        )


@dataclass(frozen=True)
class DiagReport:
    """A whole run: its level, DCGM's version, every result, and DCGM's run-time error if any."""

    level: int
    results: tuple[TestResult, ...] = ()
    version: str = ""
    runtime_error: str = ""
    gpus_asked: tuple[int, ...] = ()  # empty: all of the node's GPUs
    notes: tuple[str, ...] = field(default=())  # e.g. "diagnostics off (level 0)"

    @property
    def failures(self) -> tuple[TestResult, ...]:
        return tuple(r for r in self.results if r.status == "fail")

    @property
    def passed(self) -> bool:
        """No test failed, DCGM reported no run-time error, and something actually ran.

        A run where every test was skipped verified nothing, so it does not pass."""
        if self.runtime_error or self.failures:
            return False
        return any(r.status in ("pass", "warn") for r in self.results)

    def gpus(self) -> list[int]:
        return sorted({r.gpu for r in self.results if r.gpu is not None})

    def gpu_status(self, gpu: int) -> DiagStatus:
        found = [r.status for r in self.results if r.gpu == gpu]
        return max(found, key=_RANK.__getitem__) if found else "skip"

    def failed_tests(self) -> list[dict[str, Any]]:
        """Each failing test: name, GPU, DCGM's messages (what the thread shows)."""
        return [{"test": r.test, "gpu": r.gpu, "messages": list(r.messages)} for r in self.failures]

    def summary(self) -> str:
        if self.runtime_error:
            return f"DCGM diagnostics level {self.level} did not run: {self.runtime_error}"
        if not self.results:
            return f"DCGM diagnostics level {self.level} reported no results"
        fails = self.failures
        if fails:
            shown = "; ".join(
                f"{r.test} on GPU {r.gpu if r.gpu is not None else 'all'}"
                + (f": {r.messages[0]}" if r.messages else "")
                for r in fails[:4]
            )
            more = f" (+{len(fails) - 4} more)" if len(fails) > 4 else ""
            return f"DCGM diagnostics level {self.level} FAILED: {shown}{more}"
        if not self.passed:
            return f"DCGM diagnostics level {self.level}: every test was skipped"
        warns = sorted({r.test for r in self.results if r.status == "warn"})
        tests = len({r.test for r in self.results})
        gpus = self.gpus()
        text = f"DCGM diagnostics level {self.level} passed: {tests} test(s) on GPU(s) {gpus}"
        return text + (f", warnings in {', '.join(warns)}" if warns else "")

    def as_json(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "version": self.version,
            "runtime_error": self.runtime_error,
            "gpus_asked": list(self.gpus_asked),
            "passed": self.passed,
            "summary": self.summary(),
            "failed_tests": self.failed_tests(),
            "gpus": [{"gpu": g, "status": self.gpu_status(g)} for g in self.gpus()],
            "results": [r.as_json() for r in self.results],
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DiagReport:
        """The agent's JSON answer back into a report; DiagParseError if it is not one."""
        try:
            return cls(
                level=int(data["level"]),
                results=tuple(TestResult.from_json(r) for r in data.get("results", ())),
                version=cap(str(data.get("version", "")), 40),
                runtime_error=cap(str(data.get("runtime_error", ""))),
                gpus_asked=tuple(int(g) for g in data.get("gpus_asked", ())),
                notes=tuple(cap(str(n)) for n in data.get("notes", ())),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, DiagParseError):
                raise
            raise DiagParseError(f"not a diagnostics report: {exc!r}"[:200]) from exc


def parse_diag(text: str, *, level: int, gpus: tuple[int, ...] = ()) -> DiagReport:
    """`dcgmi diag -r LEVEL -j` output → DiagReport; DiagParseError if it is not one.

    Text before the JSON (dcgmi's banner, a warning line) is skipped."""
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise DiagParseError("dcgmi printed no JSON: " + (cap(text, 160) or "(nothing)"))
    try:
        data, _ = json.JSONDecoder().raw_decode(text[start:])
    except (json.JSONDecodeError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        raise DiagParseError(f"dcgmi's JSON does not parse: {reason}") from exc
    if not isinstance(data, dict):
        raise DiagParseError("dcgmi's JSON is not an object")
    root_key = next((k for k in _ROOTS if isinstance(data.get(k), dict)), None)
    if root_key is None:
        keys = ", ".join(sorted(str(k) for k in data)[:5]) or "none"
        raise DiagParseError(f"no 'DCGM GPU Diagnostic' or 'DCGM Diagnostic' object (keys: {keys})")
    root: dict[str, Any] = data[root_key]
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    version = str(root.get("version") or (metadata or {}).get("version") or "")
    runtime_error = cap(str(root.get("runtime_error") or data.get("runtime_error") or ""))
    categories = root.get("test_categories", [])
    if not isinstance(categories, list):
        raise DiagParseError("'test_categories' is not a list")
    results: list[TestResult] = []
    for category in categories:
        if not isinstance(category, dict):
            continue  # DCGM 3.1 writes null between entries
        name = cap(str(category.get("category", "")), 40)
        tests = category.get("tests", [])
        if not isinstance(tests, list):
            raise DiagParseError(f"category {name!r}: 'tests' is not a list")
        for test in tests:
            if isinstance(test, dict):
                results.extend(_test_results(test, category=name))
    if not results and not runtime_error:
        raise DiagParseError("DCGM's JSON holds no test results and no runtime_error")
    return DiagReport(
        level=level,
        results=tuple(results),
        version=cap(version, 40),
        runtime_error=runtime_error,
        gpus_asked=gpus,
    )


def _test_results(test: dict[str, Any], *, category: str) -> list[TestResult]:
    name = cap(str(test.get("name") or "unnamed test"), 80)
    entries = test.get("results")
    if not isinstance(entries, list):
        entries = []
    out: list[TestResult] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if str(entry.get("entity_group", "GPU")).upper() != "GPU":
            continue  # CPUs, NVSwitches: not what a GPU reset verifies
        status = _status(entry.get("status"))
        messages, codes = _messages(entry)
        if status is None:
            status = "fail"  # a word we do not know is no evidence of health
            messages = (f"unknown DCGM status {cap(str(entry.get('status')), 30)!r}", *messages)
        for gpu in _gpu_ids(entry):
            out.append(TestResult(name, status, gpu, category, messages, codes))
    if not out:
        # 4.x: a test with no per-GPU results may still say how it went in its summary.
        summary = test.get("test_summary")
        if isinstance(summary, dict) and (status := _status(summary.get("status"))):
            messages, codes = _messages(summary)
            out.append(TestResult(name, status, None, category, messages, codes))
    return out


def _status(raw: object) -> DiagStatus | None:
    return _STATUS.get(" ".join(str(raw or "").lower().split()))


def _gpu_ids(entry: dict[str, Any]) -> list[int | None]:
    raw = entry.get("entity_id", entry.get("gpu_ids"))
    if raw is None or raw == "":
        return [None]
    if isinstance(raw, bool):
        raise DiagParseError("a GPU id is a boolean")
    if isinstance(raw, int):
        return [raw]
    try:
        return [int(part) for part in str(raw).split(",") if part.strip()] or [None]
    except ValueError as exc:
        raise DiagParseError(f"GPU ids {cap(str(raw), 40)!r} are not integers") from exc


def _messages(entry: dict[str, Any]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    messages: list[str] = []
    codes: list[int] = []
    warnings = entry.get("warnings") or []
    if isinstance(warnings, str | dict):
        warnings = [warnings]
    for w in warnings if isinstance(warnings, list) else []:
        if isinstance(w, dict):
            text = w.get("warning") or w.get("message") or ""
            code = w.get("error_id", w.get("error_code"))
            if isinstance(code, int) and not isinstance(code, bool):
                codes.append(code)
        else:
            text = w
        if str(text).strip():
            messages.append(cap(str(text)))
    info = entry.get("info") or []
    for i in [info] if isinstance(info, str) else info if isinstance(info, list) else []:
        if isinstance(i, str) and i.strip():
            messages.append(cap(i))
    return tuple(messages[:MESSAGES_PER_RESULT]), tuple(codes)
