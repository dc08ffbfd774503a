"""Shared pieces of the fuzz tests: hypothesis profiles, strategies, and the error catcher.

A short profile runs by default; the long one (≥10,000 examples per property) only behind
the `fuzz_long` marker (see conftest.py).
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "alertmanager"
SHORT, LONG = "gpubot-reliability-short", "gpubot-reliability-long"
_COMMON: dict[str, Any] = {
    "deadline": None,  # the checks run a real service: timing varies with the machine
    # One service per test serves every example, as one process serves every request.
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}
settings.register_profile(SHORT, max_examples=200, **_COMMON)
settings.register_profile(LONG, max_examples=10_000, **_COMMON)


def fuzz(profile: str, strategy: st.SearchStrategy[Any], check: Callable[[Any], None]) -> None:
    """Run `check` on examples of `strategy` under one of the profiles above."""

    @settings(settings.get_profile(profile))
    @given(strategy)
    def prop(example: Any) -> None:
        check(example)

    prop()


class ErrorLog(logging.Handler):
    """Every ERROR logged anywhere: an exception nobody handled shows up here."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def take(self) -> list[str]:
        found = [f"{r.name}: {r.getMessage()}" for r in self.records]
        self.records.clear()
        return found


@contextmanager
def error_log() -> Iterator[ErrorLog]:
    handler = ErrorLog()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


def assert_clean_reply(reply: httpx.Response, *, ok: tuple[int, ...] = (200,)) -> None:
    """No 5xx; a 4xx carries one line saying why."""
    assert reply.status_code < 500, (reply.status_code, reply.text)
    if reply.status_code >= 400:
        reason = str(reply.json().get("error", ""))
        assert reason, reply.text
        assert "\n" not in reason, reply.text
    else:
        assert reply.status_code in ok, (reply.status_code, reply.text)


async def bolt_idle() -> None:
    """Wait for bolt's listeners, which run after the ack (process_before_response=False)."""
    listeners = [
        t
        for t in asyncio.all_tasks()
        if getattr(t.get_coro(), "__name__", "") == "run_ack_function_asynchronously"
    ]
    if listeners:
        await asyncio.wait(listeners)


# -- strategies ----------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3)
    ),
    max_leaves=8,
)
LABEL_NAMES = ("alertname", "Hostname", "xid", "gpu", "cluster", "severity", "namespace", "pod")
ALERTNAMES = ("GPUXidError", "GPUTemperatureHigh", "PodOOMKilled", "GPUIdleAllocated", "Other")
label_values = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["79", "13", "48", "gpu-node-07", "sim", "prod", "critical", "0", "-1", ""]),
    st.sampled_from(ALERTNAMES),
)
timestamps = st.one_of(
    st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
    ).map(lambda d: d.isoformat()),
    st.sampled_from(["0001-01-01T00:00:00Z", "2026-11-22T01:56:00.541Z", "not a time", ""]),
)
FIXTURE_DOCS = [
    json.loads((FIXTURES / name).read_text())
    for name in ("xid79_firing.json", "grouped_two_alerts.json", "alertmanager_resolved.json")
]


@st.composite
def alert_docs(draw: st.DrawFn) -> dict[str, Any]:
    """An Alertmanager webhook body close to a real one, with fuzzed alerts."""
    doc = copy.deepcopy(draw(st.sampled_from(FIXTURE_DOCS)))
    alerts = []
    for alert in draw(st.lists(st.sampled_from(doc["alerts"]), min_size=0, max_size=3)):
        alert = copy.deepcopy(alert)
        alert["labels"].update(
            draw(
                st.dictionaries(
                    st.sampled_from(LABEL_NAMES) | st.text(max_size=12), label_values, max_size=5
                )
            )
        )
        for key in ("startsAt", "endsAt"):
            if draw(st.booleans()):
                alert[key] = draw(timestamps)
        alert["status"] = draw(st.sampled_from(["firing", "resolved"]))
        alert["fingerprint"] = f"{draw(st.integers(0, 2**64 - 1)):016x}"
        alerts.append(alert)
    doc["alerts"] = alerts
    return doc


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[Any]) -> Any:
    """`base` with up to three values anywhere in it replaced or removed."""
    doc = copy.deepcopy(draw(base))
    for _ in range(draw(st.integers(0, 3))):
        spots = list(_spots(doc))
        if not spots:
            break
        container, key = draw(st.sampled_from(spots))
        if draw(st.booleans()) and isinstance(container, dict):
            del container[key]
        else:
            container[key] = draw(json_values)
    return doc


def _spots(value: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield value, key
            yield from _spots(item)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield value, index
            yield from _spots(item)


webhook_bodies = st.one_of(
    st.binary(max_size=300),
    json_values.map(lambda v: json.dumps(v).encode()),
    mutated(alert_docs()).map(lambda d: json.dumps(d).encode()),
    alert_docs().map(lambda d: json.dumps(d).encode()),
)
