"""The reliability suite: real Alertmanager, real PostgreSQL, crashes, fuzzing and faults.

Harness modules from the scenario and integration suites (the Slack stand-in, the Kubernetes
API stand-in) are imported by their bare names, so their directories go on sys.path here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from reliability_procs import PgSchema, Procs, pg_schema

TESTS = Path(__file__).resolve().parents[1]
for extra in (TESTS / "scenario", TESTS / "integration" / "kube"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

LONG_FUZZ_ENV = "GPUBOT_FUZZ_LONG"
_KEEP = (LONG_FUZZ_ENV, "GPUBOT_TEST_PG_URL")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`fuzz_long` tests run only when asked for: GPUBOT_FUZZ_LONG=1, or `-m fuzz_long`.

    This skip is by design (the long variants take many minutes), so it stays a skip with
    CI=true too; the short variants of the same properties run in every test run.
    """
    expr = config.getoption("markexpr", "") or ""
    asked = os.environ.get(LONG_FUZZ_ENV) == "1" or (
        "fuzz_long" in expr and "not fuzz_long" not in expr
    )
    if asked:
        return
    skip = pytest.mark.skip(
        reason=f"long fuzzing (≥10,000 examples): set {LONG_FUZZ_ENV}=1 or pass -m fuzz_long"
    )
    for item in items:
        if item.get_closest_marker("fuzz_long") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_env_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings come from each test, never from the developer's environment."""
    for name in list(os.environ):
        if name.startswith(("GPUBOT_", "SLACK_")) and name not in _KEEP:
            monkeypatch.delenv(name)


@pytest.fixture
def procs() -> Iterator[Procs]:
    """Processes the test starts; each is stopped by its PID when the test ends."""
    started = Procs()
    yield started
    started.stop()


@pytest.fixture
def pg() -> Iterator[PgSchema]:
    """A fresh PostgreSQL schema (skip, or fail with CI=true, when PostgreSQL is down)."""
    schema = pg_schema()
    yield schema
    schema.drop()
